"""The subject: production code of one tree, contained, served over the call protocol."""
