"""sampling ops of nn.functional."""
FUNCTIONAL = []
