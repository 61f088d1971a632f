"""pool ops of nn.functional."""
FUNCTIONAL = []
