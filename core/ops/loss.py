"""loss ops of nn.functional."""
FUNCTIONAL = []
