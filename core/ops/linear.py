"""linear ops of nn.functional."""
FUNCTIONAL = []
