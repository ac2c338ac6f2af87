"""Vision transforms (C++): Decode, Resize, RandomResizedCrop, ..."""
