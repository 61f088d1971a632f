"""Graph passes: `shape_prop` (tensor metadata of every node)."""
