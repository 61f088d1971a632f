"""conv ops of nn.functional."""
FUNCTIONAL = []
