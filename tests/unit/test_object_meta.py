"""object_meta reads an object's metadata one way: what is missing (the object, its metadata, a key)
reads as {} or None, never as an error."""

from applyset.object_meta import annotations_of, labels_of, metadata_of, name_of, uid_of

OBJ = {"metadata": {"name": "shop", "namespace": "prod", "uid": "u-1", "labels": {"a": "1"},
                    "annotations": {"b": "2"}}}


def test_each_reader_returns_its_field():
    assert metadata_of(OBJ) is OBJ["metadata"]
    assert (name_of(OBJ), uid_of(OBJ)) == ("shop", "u-1")
    assert (labels_of(OBJ), annotations_of(OBJ)) == ({"a": "1"}, {"b": "2"})


def test_what_is_missing_reads_as_empty_or_none():
    for obj in (None, {}, {"metadata": None}, {"metadata": {}}, {"metadata": {"labels": None, "annotations": None}}):
        assert metadata_of(obj) == {} or metadata_of(obj) == obj["metadata"]
        assert (name_of(obj), uid_of(obj)) == (None, None)
        assert (labels_of(obj), annotations_of(obj)) == ({}, {})
