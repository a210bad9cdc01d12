"""container_logs.py: the shape of a bounded log read and how its text is cut."""

from applyset.wait import container_logs as logs


def test_the_previous_container_is_read_only_after_a_restart_when_none_runs():
    assert logs.wants_previous({"restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}})
    assert not logs.wants_previous({"restartCount": 2, "state": {"running": {}}})
    assert not logs.wants_previous({"restartCount": 0, "state": {"terminated": {"reason": "Error"}}})


def test_a_log_read_asks_for_a_tail_and_a_byte_limit():
    assert logs.log_request_query("app", previous=False) == {"container": "app", "tailLines": "20", "limitBytes": "4096"}
    assert logs.log_request_query("app", previous=True)["previous"] == "true"


def test_lines_are_cleaned_cut_and_a_partial_first_line_is_dropped():
    assert logs.tail_lines("\x1b[1mbold\x1b[0m\r\n\n  \nend\x07") == ["bold", "end"]
    long = "x" * 500
    assert logs.tail_lines(long) == ["x" * 297 + "..."]
    cut = "partial-start\n" + "y" * 5000
    assert logs.tail_lines(cut)[0].startswith("yyy")


def test_a_one_line_json_log_decoded_by_the_client_is_text_again():
    class Client:
        def request(self, method, path, *, query=None, body=None, content_type=None, accept="application/json", retry=None):
            return type("R", (), {"body": {"level": "error", "msg": "boom"}})()

    assert logs.read_tail(Client(), "shop", "p", "app", False) == {
        "log": ['{"level": "error", "msg": "boom"}'], "previous": False}
