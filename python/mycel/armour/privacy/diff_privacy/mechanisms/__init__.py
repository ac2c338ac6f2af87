from mycel.armour.privacy.diff_privacy.mechanisms.mechanisms import (AdaClippingWithGaussianRandom,
                                                                     ClipMechanismsFactory, NoiseAdaGaussianRandom,
                                                                     NoiseGaussianRandom, NoiseMechanismsFactory)
