"""gamut-eval: grade open-ended answers for factual completeness with meta-rubrics."""

__version__ = "0.1.0"
__all__ = ["__version__"]
