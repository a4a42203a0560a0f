"""fp16-class matmul accumulation and its documented bound; int64 down-cast policy."""
import warnings

import pytest
import torch

import tests.backend.sim.sim_helpers as sim_helpers  # noqa: F401
from spyre_device.sim.precision import Int64Policy, error_bound, fp16_class_matmul, round_mantissa


def test_rounding_matches_ieee_fp16_precision_in_fp16_range():
    x = torch.randn(10000) * 100
    assert torch.equal(round_mantissa(x), x.half().float())


def test_rounding_keeps_fp32_range_and_specials():
    x = torch.tensor([3.0e38, float("inf"), float("-inf"), float("nan"), 1e-30])
    r = round_mantissa(x)
    assert torch.isfinite(r[0]) and r[1] == float("inf") and r[2] == float("-inf") and torch.isnan(r[3])
    assert r[4] != 0


def test_reduced_matmul_changes_a_large_product_within_the_documented_bound():
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(384, 1024, generator=gen), torch.randn(1024, 256, generator=gen)
    exact = (a.double() @ b.double()).float()
    reduced = fp16_class_matmul(a, b)
    error = (reduced - exact).abs()
    assert (error <= error_bound(a, b)).all()
    assert error.mean() > 100 * ((a @ b) - exact).abs().mean()  # clearly coarser than fp32


def test_batched_reduced_matmul():
    a, b = torch.randn(3, 8, 130), torch.randn(3, 130, 5)
    assert ((fp16_class_matmul(a, b) - a @ b).abs() <= error_bound(a, b) + 1e-6).all()


def test_int64_downcast_wraps_and_warns_once():
    policy = Int64Policy("downcast")
    t = torch.tensor([2**31, -(2**31) - 1, 5, 2**40 + 7])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        policy.wrap_(t)
        policy.wrap_(torch.tensor([1]))
    assert t.tolist() == [-(2**31), 2**31 - 1, 5, 7]
    assert len([w for w in caught if "int64" in str(w.message)]) == 1


def test_int64_native_keeps_values():
    t = torch.tensor([2**40])
    Int64Policy("native").wrap_(t)
    assert t.item() == 2**40
    with pytest.raises(ValueError, match="SPYRE_INT64 must be one of downcast, native"):
        Int64Policy("truncate")


def test_fast_rounding_agrees_with_exact_rounding():
    from spyre_device.sim.precision import _round_fast

    x = torch.randn(100000) * 1000
    fast, exact = _round_fast(x), round_mantissa(x)
    ties = (fast != exact).sum().item()
    assert ties <= 100  # only exact halfway cases may round the other way
    torch.testing.assert_close(fast, exact, rtol=2**-10, atol=0)


def test_non_finite_operands_take_the_exact_path():
    a = torch.tensor([[1.0, float("inf")], [2.0, 3.0]])
    b = torch.tensor([[1.0, 0.5], [0.0, 2.0]])
    out = fp16_class_matmul(a, b)
    assert torch.isnan(out[0, 0]) and out[0, 1] == float("inf")  # inf * 0 is NaN, as in fp32
    assert out[1].tolist() == [2.0, 7.0]


def _reference_fp16_class_matmul(a, b):
    """The model as first written (out-of-place Veltkamp rounding, one addmm per stick): the
    faster in-place version must give the same bits."""
    from spyre_device.sim.precision import _SPLITTER, CHUNK

    def rnd(x):
        c = x * _SPLITTER
        return c - (c - x)

    a, b = rnd(a).contiguous(), rnd(b).contiguous()
    acc = rnd(torch.matmul(a[..., :CHUNK], b[..., :CHUNK, :]))
    for start in range(CHUNK, a.shape[-1], CHUNK):
        part = a[..., start : start + CHUNK]
        other = b[..., start : start + CHUNK, :]
        acc = rnd(acc.addmm(part, other) if acc.dim() == 2 else acc.baddbmm(part, other))
    return acc


@pytest.mark.parametrize("shapes", [((384, 1024), (1024, 256)), ((64, 64), (64, 64)), ((5, 200), (200, 7)),
                                    ((3, 8, 130), (3, 130, 5)), ((17, 65), (65, 3))])
def test_in_place_emulation_is_bit_identical_to_the_reference_model(shapes):
    gen = torch.Generator().manual_seed(1)
    a, b = torch.randn(*shapes[0], generator=gen) * 300, torch.randn(*shapes[1], generator=gen)
    assert torch.equal(fp16_class_matmul(a, b), _reference_fp16_class_matmul(a, b))
    assert torch.equal(fp16_class_matmul(a.mT.contiguous().mT, b), _reference_fp16_class_matmul(a, b))


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 1), (1, 2.0), (0, 1)])
def test_reduced_addmm_matches_the_formula(beta, alpha):
    from spyre_device.sim.precision import _addmm, _round_fast

    gen = torch.Generator().manual_seed(2)
    bias, a, b = torch.randn(70, generator=gen), torch.randn(9, 70, generator=gen), torch.randn(70, 70, generator=gen)
    expected = _round_fast(beta * bias + alpha * fp16_class_matmul(a, b))
    assert torch.equal(_addmm(bias, a, b, beta=beta, alpha=alpha), expected)
    assert torch.equal(_addmm(bias.expand(9, 70).contiguous(), a, b, beta=beta, alpha=alpha), expected)



@pytest.mark.parametrize("bias_shape", [(33,), (9, 33), (1, 33), (9, 1)])
@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, 2.0)])
def test_reduced_addmm_on_the_card_matches_the_formula(bias_shape, beta, alpha):
    """The card's addmm (K of two sticks): the product's last rounding is fused with F.linear's row
    bias or a full bias; a column bias takes torch's broadcasting add. Same bits either way."""
    from spyre_device.sim.precision import _round_fast

    gen = torch.Generator().manual_seed(7)
    bias, a, b = torch.randn(*bias_shape, generator=gen), torch.randn(9, 70, generator=gen), torch.randn(70, 33, generator=gen)
    expected = _round_fast(beta * bias + alpha * _reference_fp16_class_matmul(a, b))
    with torch.spyre.sim.precision(True):
        for b_in in (b, _transposed(b)):
            result = torch.addmm(bias.to("spyre"), a.to("spyre"), b_in.to("spyre"), beta=beta, alpha=alpha)
            assert torch.equal(result.cpu(), expected)

def _transposed(t):
    return t.mT.contiguous().mT  # same values, column-major: as F.linear passes its weight


@pytest.mark.parametrize("shapes", [((32, 64), (64, 128)), ((10, 32), (32, 128)), ((70, 130), (130, 40)),
                                    ((3, 8, 130), (3, 130, 5))])
@pytest.mark.parametrize("layout", ["tn", "nt", "tt"])
def test_strided_operands_are_rounded_as_contiguous_ones(shapes, layout):
    """The kernel transposes and rounds a strided operand in one pass: same bits as the model's copy."""
    gen = torch.Generator().manual_seed(4)
    a, b = torch.randn(*shapes[0], generator=gen) * 40, torch.randn(*shapes[1], generator=gen)
    a_in = _transposed(a) if layout[0] == "t" else a
    b_in = _transposed(b) if layout[1] == "t" else b
    assert not (a_in.is_contiguous() and b_in.is_contiguous())
    assert torch.equal(fp16_class_matmul(a_in, b_in), _reference_fp16_class_matmul(a, b))


def test_out_arguments_get_the_same_bits_whether_written_in_place_or_copied():
    """mm/addmm with out= on the card: accumulated straight into a row-major out= of the right size,
    copied into any other (wrong size, strided, the bias itself); the bits are the model's."""
    from spyre_device.sim.precision import _round_fast

    gen = torch.Generator().manual_seed(5)
    a, b, bias = torch.randn(9, 70, generator=gen), torch.randn(70, 33, generator=gen), torch.randn(9, 33, generator=gen)
    product = _reference_fp16_class_matmul(a, b)
    with torch.spyre.sim.precision(True):
        da, db = a.to("spyre"), _transposed(b).to("spyre")
        for out in (torch.empty(9, 33), torch.empty(2, 2), torch.empty(33, 9).t()):
            out = out.to("spyre") if out.is_contiguous() else torch.empty(33, 9, device="spyre").t()
            assert torch.mm(da, db, out=out) is out
            assert torch.equal(out.cpu(), product)
            out = out if out.shape == (9, 33) else torch.empty(9, 33, device="spyre")
            assert torch.equal(torch.addmm(bias.to("spyre"), da, db, out=out).cpu(), _round_fast(bias + product))
        over_bias = bias.to("spyre")
        torch.addmm(over_bias, da, db, out=over_bias)
        assert torch.equal(over_bias.cpu(), _round_fast(bias + product))


def test_back_to_back_products_of_one_shape_keep_their_own_bits():
    """The kernel reuses its scratch buffers for rounded operands of a shape seen before: products
    kept from earlier calls, and calls after one that left the fast path (an infinity), keep the
    model's bits."""
    gen = torch.Generator().manual_seed(6)
    pairs = [(torch.randn(64, 64, generator=gen) * 9, torch.randn(64, 64, generator=gen)) for _ in range(4)]  # a, b one shape
    pairs.insert(2, (torch.full((64, 64), float("inf")), pairs[0][1]))
    with torch.spyre.sim.precision(True):
        kept = [torch.mm(a.to("spyre"), _transposed(b).to("spyre")) for a, b in pairs]
    for (a, b), product in zip(pairs, kept):
        expected = _reference_fp16_class_matmul(a, b)
        assert torch.allclose(product.cpu(), expected, rtol=0, atol=0, equal_nan=True)
