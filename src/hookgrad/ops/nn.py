"""Neural-network primitives (softmax, conv, pooling, dropout, embedding, norms, losses): forward and
backward side by side. Installs its own Tensor methods at import (softmax, log_softmax, ...)."""
