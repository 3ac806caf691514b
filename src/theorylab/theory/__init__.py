"""Predictions: closed forms, fixed points, quadratures and ODEs. Pure functions of numbers."""
