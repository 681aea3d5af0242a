"""CTest's entry to the pytest suite: skipped (exit 77) where pytest is missing."""
import sys

try:
    import pytest
except ImportError:
    print("python3-pytest is not installed: the Python tests are skipped")
    sys.exit(77)
sys.exit(pytest.main(sys.argv[1:]))
