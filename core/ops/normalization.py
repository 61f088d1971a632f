"""normalization ops of nn.functional."""
FUNCTIONAL = []
