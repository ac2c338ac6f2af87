"""MindRecord: Mycel's paged record format (layout: src/mycel/data/mindrecord/format.h).

FileWriter writes rows validated against a schema, atomically; FileReader reads them back as dicts;
mycel.dataset.MindDataset feeds them to a pipeline; MnistToMR, Cifar10ToMR and ImageFolderToMR
convert common datasets."""
from mycel.mindrecord.filewriter import FAILED, SUCCESS, FileWriter
from mycel.mindrecord.filereader import FileReader
from mycel.mindrecord.tools import Cifar10ToMR, ImageFolderToMR, MnistToMR

__all__ = ["FileWriter", "FileReader", "MnistToMR", "Cifar10ToMR", "ImageFolderToMR", "SUCCESS", "FAILED"]
