"""embedding ops of nn.functional."""
FUNCTIONAL = []
