"""Edge-value samples for pointwise ops (filled in below)."""
SAMPLES = []
