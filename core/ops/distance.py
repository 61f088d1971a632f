"""distance ops of nn.functional."""
FUNCTIONAL = []
