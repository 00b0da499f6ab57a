"""The Python face: the loop driven through model backends."""
