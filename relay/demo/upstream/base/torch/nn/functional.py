"""Functional interface (demo excerpt)."""
import torch


def relu(input, inplace=False):
    if inplace:
        return torch.relu_(input)
    return torch.relu(input)


def softmax(input, dim=None, dtype=None):
    if dtype is None:
        return input.softmax(dim)
    return input.softmax(dim, dtype=dtype)


def linear(input, weight, bias=None):
    return torch._C._nn.linear(input, weight, bias)
