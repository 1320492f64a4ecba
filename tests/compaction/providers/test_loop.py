"""The tool loop's work-summary writer (SPEC §10; issue 15 item 4): the frozen
``loop@1`` prompt version, and the OpenAI summariser judged by SPEC §5's
output contract, against a scripted endpoint on a real socket."""

from __future__ import annotations

import pytest

from compaction.context.assembly import LOOP_PROMPT_V1, LOOP_PROMPT_VERSION, DeterministicLoopSummariser
from compaction.context.assembly.toolloop import LOOP_USER_TEMPLATE_V1, LoopRound, LoopSummaryRequest, RoundCall
from compaction.models import PromptVersion
from compaction.models.prompts import FrozenPromptError
from compaction.providers.loop import LoopSummaryFailed, OpenAILoopSummariser, loop_prompt_version, loop_summariser_get

pytestmark = pytest.mark.django_db

REQUEST = LoopSummaryRequest(
    goal="Cancel Q7K2LM and find a flight on March 10.", previous_summary=None,
    rounds=(LoopRound(1, "", (RoundCall("c1", "cancel_reservation", '{"reservation_id": "Q7K2LM"}',
                                        '{"status": "cancelled"}', "ok"),)),),
    notes=(), ledger=(), max_tokens=1024)


def test_loop_at_1_is_stored_frozen_with_the_librarys_text():
    pv = PromptVersion.objects.get(name=LOOP_PROMPT_VERSION)
    assert (pv.family, pv.version) == ("loop", 1)
    assert pv.system_template == LOOP_PROMPT_V1 and pv.user_template == LOOP_USER_TEMPLATE_V1
    assert pv.frozen_at is not None and pv.accepted_for_projection is False
    assert loop_prompt_version() == pv
    pv.system_template += " (edited)"
    with pytest.raises(FrozenPromptError):
        pv.save()


def test_a_library_text_that_parted_from_the_stored_one_is_refused(openai_settings, monkeypatch):
    # An edit of the library's prompt without a new version: never sent.
    monkeypatch.setattr("compaction.providers.loop.LOOP_USER_TEMPLATE_V1", LOOP_USER_TEMPLATE_V1 + " Be brief.")
    with pytest.raises(RuntimeError, match="loop@1"):
        loop_summariser_get().summarise(REQUEST)


def test_offline_by_default(settings):
    settings.COMPACTION_PROVIDER = "extractive"
    assert isinstance(loop_summariser_get(), DeterministicLoopSummariser)


def test_openai_sends_the_stored_prompt_and_returns_the_text(openai_settings, server):
    server.queue("ok")
    summariser = loop_summariser_get()
    assert isinstance(summariser, OpenAILoopSummariser)
    text = summariser.summarise(REQUEST)
    assert text == "[a-0] The fee was 0.00 EUR. [a-1] The fee was 1.01 EUR."
    (sent,) = server.requests
    assert sent["path"] == "/v1/chat/completions" and sent["authorization"] == "Bearer sk-test"
    assert sent["body"]["messages"][0]["content"] == LOOP_PROMPT_V1
    assert "cancel_reservation" in sent["body"]["messages"][1]["content"]
    assert "Cancel Q7K2LM" in sent["body"]["messages"][1]["content"]


@pytest.mark.parametrize("script, code", [("http500", "provider_error"), ("hang", "timeout"),
                                          ("text_and_tools", "tool_calls"), ("too_long", "too_long")])
def test_a_reply_that_breaks_the_contract_raises_its_code(openai_settings, server, script, code):
    server.queue(script)
    with pytest.raises(LoopSummaryFailed) as failed:
        loop_summariser_get().summarise(REQUEST)
    assert failed.value.code == code
