from mycel.armour.privacy.diff_privacy.mechanisms.mechanisms import (NoiseAdaGaussianRandom, NoiseGaussianRandom,
                                                                     NoiseMechanismsFactory)
