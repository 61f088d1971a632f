"""activation ops of nn.functional."""
FUNCTIONAL = []
