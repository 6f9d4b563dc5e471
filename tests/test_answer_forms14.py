"""Forms of issue 22, session 14, from the Wireshark development set (heldout10):

* DocBook XSL's chunked HTML puts a "Prev | Up | Next | Home" bar at the top and the
  foot of every page (``<div class="navheader">`` / ``"navfooter"``, no ARIA role):
  its section numbers ("Next: 6.2. Coding Style") were candidate versions and numbers
  on every page. The bars are no longer extracted (CHUNKER_VERSION 6);
* a number inside a build string ("v4.0.17rc0-0-ga60cf") is no figure: the "0" after
  "rc0-" was the short answer to "the maximum packet length";
* a release that opens a range ("Wireshark 2.6 and earlier enabled ...") does not
  answer a question for one release ("which version of the scripting language does it
  ship?": "an embedded Lua 5.2 interpreter"), unless the question asks for a bound or
  a requirement ("the oldest Python the build accepts": "Python 3.6 and later");
* "in which markup format": the class is "markup", and its generic head "format"
  next to a name marks a member too, past a gloss: "POD (Plain Old Documentation)
  format";
* a setting asked for is named by its identifier ("ui.rtp_player_use_disk1"), not by
  its value ("FALSE", which is no name at all);
* a number after "version" is no count ("arrived at version 1.0" for "how many people");
* an acronym in the story before the question ("one on the DMZ") is not looked for:
  "it never mentions DMZ" refused a question the sources answer;
* a part of a question that names a thing the sources never mention is not answered
  from a neighbouring line ("Is there a native build for Apple Silicon Macs, and since
  which version?" was "Yes; 1.8");
* the sentence that asks decides whether a thing is described ("... One of its
  conditions is that ... Within how many milliseconds?" describes no thing to find
  first), and a question asked as "we" ("We still have a few Windows 7 PCs in the lab.
  What is the newest release that supports them?") is a user's question about the
  documentation, like one asked as "I": no bridge to a second document.

After the eleventh held-out set's one run (ProFTPD): a pre-release letter belongs to its
release ("1.3.3rc2", not "1.3.3"), and a reference box's "Default: TLSECDHCurve
prime256v1 Context: ..." states "prime256v1" (the setting's name in capitals first, the
next field's label after).

Constructed text only (the program and its figures are invented). Each test fails on
main before this session (60b70e4)."""

from __future__ import annotations

from pathlib import Path

from kbagent.agent.answer.focus import focus_of
from kbagent.agent.answer.short import short_answer, spans
from kbagent.agent.answer.span_rules import range_release
from kbagent.agent.kinds import AskMode
from kbagent.agent.run.router import multi_hop, route
from kbagent.kb.html_text import html_to_lines
from tests.agent_runs import ask_one_file, silent_reason

_DOCBOOK = """<html><head><title>Chapter 10. Scripting</title></head><body>
<div class="navheader"><table width="100%" summary="Navigation header"><tr>
<th colspan="3" align="center">Chapter 10. Scripting</th></tr><tr>
<td align="left"><a accesskey="p" href="a.html">Prev</a></td>
<th align="center">Part II. Development</th>
<td align="right"><a accesskey="n" href="b.html">Next</a></td></tr></table><hr></div>
<div class="chapter"><h2 class="title">10.1. Introduction</h2>
<p>Frobd contains an embedded Squirrel 3.1 interpreter.</p></div>
<div class="navfooter"><hr><table width="100%" summary="Navigation footer"><tr>
<td align="left"><a accesskey="p" href="a.html">Prev</a></td>
<td align="center"><a accesskey="u" href="up.html">Up</a></td>
<td align="right"><a accesskey="n" href="b.html">Next</a></td></tr><tr>
<td align="left">9.9. Creating frobs from IDL files</td>
<td align="center"><a accesskey="h" href="index.html">Home</a></td>
<td align="right">10.2. Example: Creating a Menu</td></tr></table></div>
</body></html>
"""


def test_docbook_navigation_bars_are_not_extracted() -> None:
    lines, title = html_to_lines(_DOCBOOK)
    text = "\n".join(x.text for x in lines)
    assert "Squirrel 3.1 interpreter" in text
    assert "Prev" not in text and "Next" not in text and "Home" not in text
    assert "9.9" not in text and "10.2" not in text and "Part II" not in text
    assert title == "Chapter 10. Scripting"


def test_a_number_inside_a_build_string_is_no_figure() -> None:
    f = focus_of("What is the maximum packet length frobdump writes if I don't pass -m?")
    assert spans(f, "Frobdump (Frob) 4.0.17 (v4.0.17rc0-0-ga60cfdea0653)") == []
    # a range of two numbers keeps both
    n = focus_of("How many seconds does frobd wait between retries?")
    assert short_answer(n, "It waits between 10-20 seconds.") == "20 seconds"


def test_a_release_opening_a_range_does_not_answer_for_one_release(tmp_path: Path) -> None:
    page = ("# Scripting\n\nSquirrel is a light-weight language designed for extending "
            "applications. Frobd 2.6 and earlier enabled or disabled scripts with the "
            "variable disable_squirrel. Frobd contains an embedded Squirrel 3.1 "
            "interpreter which can be used to write decoders and taps.\n")
    final = ask_one_file(tmp_path, "scripting.md", page,
                         "Before I start scripting my own decoder: which version of the "
                         "scripting language does Frobd ship built in?")
    assert final.result.answer.startswith("3.1 [1]"), final.result.answer
    # a bound or a requirement asked for: the range is the answer, not ranked down
    said = "Frobd 2.6 and later read v2 files."
    end = said.index("2.6") + 3
    assert range_release(focus_of("Which Frobd release reads v2 files?"), said, end) > 0
    for asked in ("What is the oldest Frobd release that reads v2 files?",
                  "Which Frobd release is required to read v2 files?",
                  "Which Frobd release before 3.0 reads v2 files?"):
        assert range_release(focus_of(asked), said, end) == 0, asked


def test_the_generic_head_of_the_asked_class_marks_a_member_past_a_gloss() -> None:
    f = focus_of("Before they moved to FrobDoc, in which markup format were Frob's "
                 "manual pages written?")
    assert short_answer(f, "The man pages were originally in Perl’s POD (Plain Old "
                           "Documentation) format and were later converted to "
                           "FrobDoc.") == "POD"


def test_a_question_asked_as_we_is_a_users_question() -> None:
    q = ("We still have a handful of Frobix 7 PCs in the lab. What is the newest Frobd "
         "release branch that officially supports them?")
    assert multi_hop(q) is None
    assert route(q) is AskMode.RAG
    # a title with a capitalised "We" is no user speaking
    bridge = ('When was the British author who wrote the novel on which "Here We Go Round '
              'the Mulberry Bush" was based born?')
    assert route(bridge) is AskMode.AGENT


def test_the_sentence_that_asks_decides_whether_a_thing_is_described() -> None:
    # the setting first, then the question: "that" describes no thing to find first
    q = ("Frobd tagged a packet as a fast retransmission. One of its conditions is that "
         "the last acknowledgement was seen only a moment before. Within how many "
         "milliseconds?")
    assert multi_hop(q) is None
    assert route(q) is AskMode.RAG
    # a described thing in the sentence that asks is still a bridge ("St." ends none)
    assert multi_hop("The Frob album came out in 1980. Who produced the album that "
                     "followed it?") == "bridge"
    assert multi_hop("What is the adventure in a game designed by Ken St. Andre, "
                     "the author who wrote Frob?") == "bridge"


def test_a_setting_asked_for_is_named_by_its_identifier_not_its_value() -> None:
    f = focus_of("Playing back hundreds of calls in the Frob Player eats all my RAM. Which "
                 "setting should I switch first so that the sound goes to a temporary "
                 "file instead?")
    assert short_answer(f, "frob.player_use_disk1 - When set to FALSE (default), audio "
                           "samples are kept in memory.") == "frob.player_use_disk1"
    # a value is no name of anything
    assert "FALSE" not in [x.text for x in spans(f, "When set to FALSE, samples stay in "
                                                    "memory.")]


def test_a_version_is_no_count() -> None:
    f = focus_of("How many people attended the first Frobfest back in 2008?")
    assert spans(f, "In 2008, after ten years of development, Frob finally arrived at "
                    "version 1.0.") == []
    # unless a version is asked for
    v = focus_of("Which version did Frob arrive at in 2008?")
    assert short_answer(v, "In 2008 Frob finally arrived at version 1.0.") == "1.0"


def test_an_acronym_in_the_story_is_not_what_is_asked() -> None:
    pages = {"prefs.md": "You can also pass preference names to Frob and TFrob on the "
                         "command line. For example, the gui.prepend_window_title can be "
                         "used to differentiate between different instances of Frob."}
    q = ("I run two copies of Frob side by side, one on the office LAN and one on the "
         "DMZ, and I keep mixing up their windows. Which preference can I pass with -o "
         "to label each one?")
    assert silent_reason(pages, q) is None
    # an acronym in the sentence that asks is still looked for
    assert silent_reason(pages, "Which preference labels the DMZ copy of Frob?") is not None


def test_a_part_about_a_thing_never_mentioned_is_not_answered(tmp_path: Path) -> None:
    page = ("# Platforms\n\nFrob supports macOS 10.13 and later. Frob 2.6 was the last "
            "release branch to support Mac OS X 10.6 and 10.7. Frob 1.8 was the last "
            "release branch to support Mac OS X on PowerPC.\n")
    final = ask_one_file(tmp_path, "platforms.md", page,
                         "Is there a native build of Frob for Quantum Silicon Macs, and "
                         "since which version?")
    assert final.result.abstained, final.result.answer
    assert "never mentions" in final.result.answer


# After the eleventh held-out set's one run (ProFTPD, now a development set):


def test_a_pre_release_letter_belongs_to_the_release() -> None:
    f = focus_of("Starting with which Frobd release can mod_frob handle implicit FTPS?")
    assert short_answer(f, "All that said, in Frobd 1.3.3rc2, the mod_frob module was "
                           "enhanced to support implicit FTPS.") == "1.3.3rc2"
    assert short_answer(f, "Implicit FTPS came with frobd-1.3.2a.") == "1.3.2a"


def test_a_reference_box_default_is_the_value_after_the_setting_name() -> None:
    f = focus_of("Which elliptic curve does mod_frob use for key exchange when "
                 "FrobECDHCurve is not set?")
    box = ("Syntax: FROBECDHCurve curve Default: FROBECDHCurve prime256v1 Context: server "
           "config, <VirtualHost>, <Global> Module: mod_frob")
    assert short_answer(f, box.replace("FROBECDHCurve", "FrobECDHCurve")) == "prime256v1"
    g = focus_of("Which elliptic curve does mod_frob use when FROBECDHCurve is not set?")
    assert short_answer(g, box) == "prime256v1"


def test_the_asking_sentence_is_not_cut_at_an_abbreviation() -> None:
    from kbagent.agent.answer.focus import asking_sentence

    assert asking_sentence("Our PDF does not come out on A4. What page format does Frob "
                           "use?") == "What page format does Frob use?"
    for q in ("Who designed the game by Ken St. Andre that Frob is based on?",
              "What did the U.S. Department of Frob spend?",
              "Which ruling, Frobster v. Goldberg, held it?"):
        assert asking_sentence(q) == q
