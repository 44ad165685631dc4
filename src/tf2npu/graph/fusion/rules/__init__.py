"""The fusion rules, one module each; importing this package registers them all."""
