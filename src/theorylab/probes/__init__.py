"""Measurements on models, samples and activations; they return numbers."""
