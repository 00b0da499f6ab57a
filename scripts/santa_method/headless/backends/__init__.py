"""Model backends, each written against the public protocol in `base`."""
