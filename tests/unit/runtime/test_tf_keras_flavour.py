"""The TensorFlow entry points run on Keras 2: tf-keras where TensorFlow >= 2.16 ships Keras 3,
and the Keras 2 built into TensorFlow <= 2.15 (the 2.14 training image the examples pin). A
stand-in ``tensorflow`` module gives ``import_tensorflow`` each image's ``tf.keras``."""

from __future__ import annotations

import sys
import types

import pytest

from smdist.runtime import tf_training


def tensorflow_with_keras(monkeypatch, name: str, version: str) -> None:
    keras = types.ModuleType(name)
    if version:
        keras.__version__ = version
    tensorflow = types.ModuleType("tensorflow")
    tensorflow.__version__ = "2.x"
    tensorflow.keras = keras
    monkeypatch.setitem(sys.modules, "tensorflow", tensorflow)
    # import_tensorflow sets these in this process; the test puts back what was there.
    monkeypatch.setenv("TF_USE_LEGACY_KERAS", "1")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.mark.parametrize(
    ("name", "version"),
    [
        ("tf_keras", "2.21.0"),
        ("keras.api._v2.keras", "2.14.0"),
        ("keras._tf_keras.keras", "2.15.0"),
    ],
)
def test_keras_2_is_accepted_however_the_image_provides_it(monkeypatch, name, version):
    tensorflow_with_keras(monkeypatch, name, version)
    assert tf_training.import_tensorflow().keras.__name__ == name


def test_keras_3_is_refused_naming_tf_keras(monkeypatch):
    tensorflow_with_keras(monkeypatch, "keras.api", "3.15.0")
    with pytest.raises(RuntimeError, match="Keras 3.15.0, not Keras 2.*tf-keras"):
        tf_training.import_tensorflow()
