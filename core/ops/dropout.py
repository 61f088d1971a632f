"""dropout ops of nn.functional."""
FUNCTIONAL = []
