"""Pure functions over the method's contracts: no I/O except reading packaged data."""
