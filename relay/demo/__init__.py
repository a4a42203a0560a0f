"""The bundled demo upstream (`relay-cli demo init DIR`). See docs/demo.md."""
from relay.demo.generate import MANIFEST, DemoError, init_demo

__all__ = ["MANIFEST", "DemoError", "init_demo"]
