"""Make the core library importable as ``applyset`` without an ansible_collections tree."""

import sys
from pathlib import Path

MODULE_UTILS = Path(__file__).resolve().parents[2] / "plugins" / "module_utils"
if str(MODULE_UTILS) not in sys.path:
    sys.path.insert(0, str(MODULE_UTILS))
