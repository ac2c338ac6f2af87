"""MindData: datasets built lazily by chained calls (`.map().batch()`) and run by a C++ engine."""
from mycel.dataset.engine import *  # noqa: F401,F403  Dataset, iterators, NumpySlices/Generator
from mycel.dataset.samplers import *  # noqa: F401,F403
from mycel.dataset.sources import *  # noqa: F401,F403  Mnist, Cifar10/100, ImageFolder, CSV
from mycel.dataset.mindrecord_dataset import *  # noqa: F401,F403  MindDataset
from mycel.dataset.text_file import *  # noqa: F401,F403  TextFileDataset
from mycel.dataset.text_sources import *  # noqa: F401,F403  IMDBDataset, CLUEDataset
from mycel.dataset.audio_sources import *  # noqa: F401,F403  YesNoDataset, LJSpeechDataset
from mycel.dataset.detection_sources import *  # noqa: F401,F403  VOC, Coco, CelebA
from mycel.dataset.tfrecord import TFRecordDataset, Schema, Shuffle  # noqa: F401
from mycel.dataset.text_csv_sources import *  # noqa: F401,F403  AGNews, DBpedia, Yelp, SST2, ...
from mycel.dataset.speech_sources import *  # noqa: F401,F403  SpeechCommandsDataset
from mycel.dataset.image_sources import *  # noqa: F401,F403  KMnist, EMnist, SVHN, STL10, ...
from mycel.dataset.corpus_sources import *  # noqa: F401,F403  CoNLL2000, IWSLT, Multi30k, WikiText, ...
from mycel.dataset.audio_corpus_sources import *  # noqa: F401,F403  LibriTTS, GTZAN, CMUArctic
from mycel.dataset.folder_sources import *  # noqa: F401,F403  Caltech101/256, Food101, LSUN, LFW, ...
from mycel.dataset.task_sources import *  # noqa: F401,F403  Cityscapes, DIV2K, KITTI, WIDERFace, Manifest
from mycel.dataset.binary_sources import *  # noqa: F401,F403  QMnist, Semeion, USPS, PhotoTour
from mycel.dataset.synthetic_sources import *  # noqa: F401,F403  FakeImageDataset, RandomDataset
from mycel.dataset.speech_corpus_sources import *  # noqa: F401,F403  LibriSpeech, Tedlium
from mycel.dataset.squad_source import *  # noqa: F401,F403  SQuADDataset
from mycel.dataset import vision, transforms, text, audio  # noqa: F401
