"""UI4A: the generative-UI runtime's component catalog and the validation of model surfaces."""
