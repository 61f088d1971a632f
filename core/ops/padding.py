"""padding ops of nn.functional."""
FUNCTIONAL = []
