"""Inventory of an upstream tree's tests by AST scan (no imports). See docs/upstream.md."""
from selector.inventory.model import ALL_OPS, FileInventory, HelperFunction, Inventory, TestClass, TestFunction
from selector.inventory.scan import is_test_file, module_name, scan_file, scan_texts, scan_tree

__all__ = ["ALL_OPS", "FileInventory", "HelperFunction", "Inventory", "TestClass", "TestFunction",
           "is_test_file", "module_name", "scan_file", "scan_texts", "scan_tree"]
