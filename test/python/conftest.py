import os
import sys

# Import the package from the source tree unless PYTHONPATH already points
# somewhere (ctest sets it; the install test points it at the install tree).
_src = os.path.join(os.path.dirname(__file__), "..", "..", "python")
if not any(os.path.isdir(os.path.join(p, "flashmlir")) for p in sys.path if p):
    sys.path.insert(0, os.path.normpath(_src))
