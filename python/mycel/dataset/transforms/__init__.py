"""Generic transforms: TypeCast, OneHot, Compose, RandomApply, RandomChoice."""
