#!/usr/bin/env python3
"""Generate the JSON conformance collection in this directory.

Every case is written here from the RFC 8259 ABNF (and RFC 3629 for UTF-8);
nothing is copied from a public suite. Names:

    y_<production>_<what>.json   a JSON text; must be accepted
    n_<production>_<what>.json   not a JSON text; must be rejected
    i_accept_<what>.json         RFC leaves it to the implementation; we accept
    i_reject_<what>.json         RFC leaves it to the implementation; we reject

Deterministic and rerunnable: it deletes the [yni]_*.json files in this
directory and writes them all again. Run: python3 tests/json_conformance/gen.py
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_DEPTH = 64  # alktunnel's default max_depth

cases = []  # (name, bytes)


def b(x):
    return x if isinstance(x, bytes) else x.encode("ascii")


def add(kind, name, data):
    cases.append((kind + "_" + name, b(data)))


def y(name, data):
    add("y", name, data)


def n(name, data):
    add("n", name, data)


def i_accept(name, data):
    add("i_accept", name, data)


def i_reject(name, data):
    add("i_reject", name, data)


def string(raw):
    """A JSON string literal around raw bytes, inside an array."""
    return b"[\"" + b(raw) + b"\"]"


# ---------------------------------------------------------------- ws
# ws = *( %x20 / %x09 / %x0A / %x0D )
for label, ch in (("space", b" "), ("tab", b"\t"), ("lf", b"\n"), ("cr", b"\r")):
    # before and after the text, around every structural character
    y("ws_" + label + "_everywhere",
      ch + b"{" + ch + b"\"a\"" + ch + b":" + ch + b"[" + ch + b"1" + ch + b"," + ch + b"2" + ch + b"]" +
      ch + b"," + ch + b"\"b\"" + ch + b":" + ch + b"{" + ch + b"}" + ch + b"}" + ch)
y("ws_crlf_around", "\r\n[]\r\n")
y("ws_all_four_mixed", " \t\r\n[ \t\r\n1 \t\r\n] \t\r\n")
y("ws_long_run", " " * 4096 + "0" + "\n" * 4096)
y("ws_in_empty_array", "[ \t\n\r]")
y("ws_in_empty_object", "{ \t\n\r}")

lookalikes = (
    ("formfeed", b"\x0c"),
    ("vtab", b"\x0b"),
    ("nul", b"\x00"),
    ("nbsp_u00a0", b"\xc2\xa0"),
    ("line_separator_u2028", b"\xe2\x80\xa8"),
    ("zwnbsp_ufeff", b"\xef\xbb\xbf"),
)
for label, ch in lookalikes:
    n("ws_" + label + "_inside_array", b"[1" + ch + b"]")
for label in ("formfeed", "nbsp_u00a0", "nul"):
    n("ws_" + label + "_before_value", dict(lookalikes)[label] + b"[]")
for label in ("vtab", "nul"):
    n("ws_" + label + "_after_value", b"1" + dict(lookalikes)[label])
n("ws_escaped_newline_outside_string", "[1\\n]")

# BOM: RFC 8259 section 8.1 says implementations MAY ignore it; we reject.
i_reject("bom_before_array", b"\xef\xbb\xbf[]")
i_reject("bom_before_string", b"\xef\xbb\xbf\"a\"")
i_reject("bom_only", b"\xef\xbb\xbf")
i_reject("bom_after_ws", b" \xef\xbb\xbf[]")
n("ws_utf16le_bom", b"\xff\xfe[]")
n("json_text_utf16le_encoded", "[1]".encode("utf-16-le"))

# ---------------------------------------------------------------- begin/end-array, array
y("array_empty", "[]")
y("array_one_empty_array", "[[]]")
y("array_one_empty_object", "[{}]")
y("array_mixed_types", '[1, -2.5e3, "s", true, false, null, [], {}, [1], {"k": "v"}]')
y("array_many_elements", "[" + ",".join(str(k) for k in range(1000)) + "]")
y("array_nested_siblings", "[[],[[]],[[],[]],[[[]]]]")
y("array_of_empty_strings", '["","",""]')
n("begin_array_unclosed", "[")
n("begin_array_unclosed_with_value", "[1")
n("begin_array_unclosed_nested", "[[]")
n("end_array_alone", "]")
n("end_array_extra", "[]]")
n("end_array_before_begin", "][")
n("end_array_unopened_after_value", "1]")
n("array_closed_by_brace", "[1}")
n("array_empty_closed_by_brace", "[}")
n("array_opened_by_brace", "{]")
n("array_fullwidth_brackets", "\uff3b1\uff3d".encode("utf-8"))
n("array_colon_inside", '["a":1]')

# ---------------------------------------------------------------- value-separator
y("value_separator_no_ws", "[1,2,3]")
y("value_separator_ws_both_sides", "[1 , 2 ,\n3]")
y("value_separator_between_containers", "[[],{},[]]")
n("value_separator_trailing_array", "[1,]")
n("value_separator_trailing_array_ws", "[1, ]")
n("value_separator_leading_array", "[,1]")
n("value_separator_only_array", "[,]")
n("value_separator_double_array", "[1,,2]")
n("value_separator_missing_numbers", "[1 2]")
n("value_separator_missing_strings", '["a" "b"]')
n("value_separator_missing_strings_adjacent", '["a""b"]')
n("value_separator_missing_literals", "[true false]")
n("value_separator_missing_arrays_adjacent", "[[][]]")
n("value_separator_missing_objects", "[{}{}]")
n("value_separator_trailing_object", '{"a":1,}')
n("value_separator_leading_object", '{,"a":1}')
n("value_separator_double_object", '{"a":1,,"b":2}')
n("value_separator_missing_object", '{"a":1 "b":2}')
n("value_separator_semicolon", "[1;2]")
n("value_separator_fullwidth_comma", "[1\uff0c2]".encode("utf-8"))
n("value_separator_top_level", "1,2")
n("value_separator_top_level_leading", ",1")
n("value_separator_alone", ",")

# ---------------------------------------------------------------- begin/end-object, member, name-separator
y("object_empty", "{}")
y("object_one_member", '{"a":1}')
y("object_many_members", "{" + ",".join('"k%d":%d' % (k, k) for k in range(500)) + "}")
y("object_member_value_types",
  '{"n":1,"s":"x","t":true,"f":false,"z":null,"a":[],"o":{}}')
y("object_nested", '{"a":{"b":{"c":{}}}}')
y("object_in_array_in_object", '{"a":[{"b":[{"c":null}]}]}')
y("member_empty_key", '{"":0}')
y("member_key_with_escapes", '{"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041":1}')
y("member_key_utf8", '{"\u00e9\u4e2d\U0001f600":1}'.encode("utf-8"))
y("member_key_escaped_nul", '{"\\u0000":1}')
y("member_key_long", '{"' + "k" * 10000 + '":1}')
y("member_key_looks_like_number", '{"1":1,"-2.5":2}')
y("name_separator_ws_both_sides", '{"a" : 1}')
y("name_separator_newlines", '{"a"\n:\n1}')
i_accept("duplicate_keys", '{"a":1,"a":2}')
i_accept("duplicate_keys_different_types", '{"a":1,"a":"x","a":null,"a":[]}')
i_accept("duplicate_keys_escaped_equal", '{"a":1,"\\u0061":2}')
i_accept("duplicate_keys_nested", '{"a":{"b":1,"b":2},"a":{}}')

n("begin_object_unclosed", "{")
n("begin_object_unclosed_after_key", '{"a"')
n("begin_object_unclosed_after_colon", '{"a":')
n("begin_object_unclosed_after_value", '{"a":1')
n("begin_object_unclosed_after_comma", '{"a":1,')
n("end_object_alone", "}")
n("end_object_extra", "{}}")
n("object_closed_by_bracket", '{"a":1]')
n("member_unquoted_key", "{a:1}")
n("member_single_quoted_key", "{'a':1}")
n("member_number_key", "{1:1}")
n("member_array_key", "{[]:1}")
n("member_key_only", '{"a"}')
n("member_keys_without_values", '{"a","b"}')
n("member_value_without_key", "{1}")
n("member_value_without_key_string", '{"a":1,"b"}')
n("member_missing_value", '{"a":}')
n("member_missing_value_before_comma", '{"a":,"b":1}')
n("member_key_unterminated", '{"a:1}')
n("member_key_bad_escape", '{"\\x":1}')
n("member_key_raw_control", b'{"a\x01":1}')
n("name_separator_missing", '{"a" 1}')
n("name_separator_missing_adjacent", '{"a"1}')
n("name_separator_double", '{"a"::1}')
n("name_separator_equals", '{"a"=1}')
n("name_separator_arrow", '{"a"=>1}')
n("name_separator_without_key", "{:1}")
n("name_separator_top_level", '"a":1')
n("name_separator_fullwidth_colon", '{"a"\uff1a1}'.encode("utf-8"))
n("name_separator_two_values", '{"a":1:2}')

# ---------------------------------------------------------------- literals
for word in ("true", "false", "null"):
    y(word + "_top_level", word)
    y(word + "_in_array", "[" + word + "]")
    for k in (1, len(word) - 1):  # first letter only, all but the last
        n(word + "_truncated_" + word[:k], word[:k])
    n(word + "_capitalised", word.capitalize())
    n(word + "_upper", word.upper())
    n(word + "_trailing_letter", word + "x")
n("true_truncated_in_array", "[tru]")
n("true_last_letter_upper", "truE")
n("true_trailing_letter_in_array", "[truex]")
n("false_trailing_digit", "false1")
n("null_doubled", "nullnull")
n("false_split_by_space", "fa lse")
n("null_fullwidth_first_letter", "\uff4eull".encode("utf-8"))
n("true_then_false", "[truefalse]")
n("null_then_true", "nulltrue")
n("literal_none", "None")
n("literal_nil", "nil")
n("literal_undefined", "undefined")

# ---------------------------------------------------------------- numbers
# number = [ minus ] int [ frac ] [ exp ]
y("int_zero", "0")
y("int_one", "1")
y("int_multi_digit", "1234567890")
y("int_in_array", "[0,1,10,99]")
y("int_with_zero_inside", "100")
y("minus_zero", "-0")
y("minus_int", "-1")
y("minus_multi_digit", "-9876543210")
y("frac_simple", "1.5")
y("frac_zero_point_zero", "0.0")
y("frac_minus_zero_point_zero", "-0.0")
y("frac_leading_zero", "0.5")
y("frac_many_digits", "0.000001")
y("exp_lower_e", "1e5")
y("exp_upper_e", "1E5")
y("exp_plus", "1e+5")
y("exp_minus", "1e-5")
y("exp_upper_minus_zero", "1E-0")
y("exp_zero", "0e0")
y("exp_minus_zero_mantissa", "-0e-0")
y("exp_leading_zeros", "1e00005")
y("exp_with_frac", "1.5e10")
y("exp_with_frac_upper_plus", "-12.375E+3")
y("number_all_parts", "-123.456e+789")
y("number_in_object", '{"a":-1.5e-3}')
y("number_followed_by_ws", "[1 ,2\t]")
y("number_2_pow_53_plus_1", "9007199254740993")
y("number_long_fraction", "0." + "1234567890" * 10)
# Magnitude and precision are left to implementations (RFC 8259 section 6);
# the reader accepts any, conversion is the typed layer's business.
i_accept("number_100_digit_integer", "1" + "0" * 99)
i_accept("number_above_int64", "9223372036854775808")
i_accept("number_below_int64", "-9223372036854775809")
i_accept("number_above_uint64", "18446744073709551616")
i_accept("number_huge_exponent", "1e999999")
i_accept("number_tiny_exponent", "1e-999999")
i_accept("number_above_double", "1.8e308")
i_accept("number_below_denormal", "2.4e-324")
i_accept("number_exponent_beyond_int64", "1e99999999999999999999")
i_accept("number_1000_digit_fraction", "0." + "3" * 1000)

n("minus_alone", "-")
n("minus_alone_in_array", "[-]")
n("minus_then_ws_then_digit", "- 1")
n("minus_double", "--1")
n("minus_plus", "-+1")
n("minus_then_point", "-.5")
n("minus_unicode_minus_sign", "\u22121".encode("utf-8"))
n("plus_leading", "+1")
n("plus_leading_in_array", "[+1]")
n("int_leading_zero", "01")
n("int_double_zero", "00")
n("int_leading_zero_in_array", "[01]")
n("int_minus_leading_zero", "-01")
n("int_leading_zero_with_frac", "001.5")
n("int_arabic_indic_digit", "\u0661".encode("utf-8"))
n("int_fullwidth_digit", "\uff11".encode("utf-8"))
n("int_digit_group_underscore", "1_000")
n("int_digit_group_comma_top_level", "1,000")
n("frac_no_int", ".5")
n("frac_no_int_in_array", "[.5]")
n("frac_point_alone", ".")
n("frac_no_digits", "5.")
n("frac_no_digits_in_array", "[5.]")
n("frac_no_digits_then_exp", "1.e5")
n("frac_two_points", "1.5.5")
n("frac_double_point", "1..5")
n("exp_no_digits", "1e")
n("exp_plus_no_digits", "1e+")
n("exp_minus_no_digits", "1e-")
n("exp_no_digits_in_array", "[1e]")
n("exp_sign_twice", "1e+-1")
n("exp_double_e", "1ee5")
n("exp_twice", "1e5e5")
n("exp_fraction", "1e5.5")
n("exp_no_mantissa", "e5")
n("exp_space_before", "1 e5")
n("exp_space_after", "1e 5")
n("number_hex", "0x1F")
n("number_infinity", "Infinity")
n("number_plus_infinity", "+Infinity")
n("number_nan", "NaN")
n("number_minus_nan", "-NaN")
n("number_two_top_level", "1 2")
n("number_trailing_nul", b"1\x00")

# ---------------------------------------------------------------- strings
# string = quotation-mark *char quotation-mark
y("string_empty", '""')
y("string_empty_in_array", '[""]')
y("string_ascii_word", '"hello"')
y("string_top_level_with_ws", ' "a" ')
y("string_unescaped_slash", '"a/b"')
y("string_single_quote_inside", "\"it's\"")
y("string_all_printable_ascii",
  b'"' + bytes(c for c in range(0x20, 0x7F) if c not in (0x22, 0x5C)) + b'"')
y("string_raw_del_7f", b'"\x7f"')
y("string_long_10000", '"' + "ab" * 5000 + '"')
y("string_looks_like_structure", '"[1,{\\"a\\":2}]"')
# escape: \" \\ \/ \b \f \n \r \t \uXXXX
for label, esc in (("quote", '\\"'), ("backslash", "\\\\"), ("slash", "\\/"),
                   ("backspace", "\\b"), ("formfeed", "\\f"), ("newline", "\\n"),
                   ("return", "\\r"), ("tab", "\\t")):
    y("escape_" + label, '"a' + esc + 'b"')
y("escape_all_short_forms", '"\\"\\\\\\/\\b\\f\\n\\r\\t"')
y("escape_backslash_then_quote_end", '"\\\\"')
y("escape_many_backslashes", '"' + "\\\\" * 100 + '"')
y("escape_u_nul", '"\\u0000"')
y("escape_u_control_1f", '"\\u001f"')
y("escape_u_ascii_a", '"\\u0041"')
y("escape_u_lower_hex", '"\\u00e9"')
y("escape_u_mixed_case_hex", '"\\uaBcD"')
y("escape_u_ffff", '"\\uFFFF"')
y("escape_u_fffe_noncharacter", '"\\ufffe"')
y("escape_u_quote_and_backslash", '"\\u0022\\u005c"')
y("escape_u_followed_by_digits", '"\\u00411234"')
y("escape_surrogate_pair", '"\\uD83D\\uDE00"')
y("escape_surrogate_pair_lower", '"\\ud83d\\ude00"')
y("escape_surrogate_pair_min", '"\\uD800\\uDC00"')
y("escape_surrogate_pair_max", '"\\uDBFF\\uDFFF"')
y("escape_surrogate_pair_in_key", '{"\\uD834\\uDD1E":1}')
# The grammar allows any 4HEXDIG; pairing is the typed layer's decision.
i_accept("string_lone_high_surrogate", '"\\uD800"')
i_accept("string_lone_low_surrogate", '"\\uDC00"')
i_accept("string_high_surrogate_then_ascii_escape", '"\\uD800\\u0041"')
i_accept("string_high_surrogate_then_raw_ascii", '"\\uDBFFx"')
i_accept("string_high_surrogate_then_short_escape", '"\\uD800\\n"')
i_accept("string_two_high_surrogates", '"\\uD800\\uD800"')
i_accept("string_reversed_surrogate_pair", '"\\uDC00\\uD800"')
i_accept("string_lone_surrogate_in_key", '{"\\uDFFF":0}')

for label, esc in (("x", "\\x41"), ("a_bell", "\\a"), ("single_quote", "\\'"),
                   ("zero", "\\0"), ("octal", "\\012"), ("upper_u", "\\U0041"),
                   ("v", "\\v"), ("space", "\\ "), ("u_braces", "\\u{41}")):
    n("escape_invalid_" + label, '"' + esc + '"')
n("escape_backslash_raw_newline", '"\\\n"')
n("escape_backslash_utf8", '"\\\u00e9"'.encode("utf-8"))
n("escape_backslash_invalid_utf8", b'"\\\xff"')
n("escape_u_3_hex", '"\\u123"')
n("escape_u_0_hex", '"\\u"')
n("escape_u_non_hex_g", '"\\u12G4"')
n("escape_u_non_hex_z", '"\\uZZZZ"')
n("escape_u_fullwidth_digit", '"\\u00\uff141"'.encode("utf-8"))
n("escape_u_second_half_of_pair_short", '"\\uD800\\uDC0"')
n("escape_u_eof", '"\\u12')
n("escape_backslash_eof", '"\\')
n("escape_quote_then_eof", '"\\"')
n("escape_backslash_outside_string", '\\"a"')

# unescaped = %x20-21 / %x23-5B / %x5D-10FFFF ; raw controls are not chars
for c in (0x00, 0x01, 0x08, 0x09, 0x0A, 0x0C, 0x0D, 0x1F):
    n("unescaped_raw_control_%02x" % c, b'"a' + bytes([c]) + b'b"')
n("unescaped_raw_nul_in_key", b'{"\x00":1}')

n("string_unterminated_empty", '"')
n("string_unterminated", '"abc')
n("string_unterminated_in_array", '["abc]')
n("string_unterminated_escaped_quote", '["abc\\"]')
n("string_single_quotes", "'abc'")
n("string_smart_quotes", "\u201cabc\u201d".encode("utf-8"))
n("string_unquoted_word", "abc")
n("string_unquoted_in_array", "[abc]")
n("string_two_adjacent_top_level", '"a""b"')

# ---------------------------------------------------------------- UTF-8 (RFC 3629) inside strings
good_utf8 = (
    ("2byte_min_u0080", b"\xc2\x80"),
    ("2byte_max_u07ff", b"\xdf\xbf"),
    ("3byte_min_u0800", b"\xe0\xa0\x80"),
    ("3byte_before_surrogates_ud7ff", b"\xed\x9f\xbf"),
    ("3byte_after_surrogates_ue000", b"\xee\x80\x80"),
    ("3byte_max_uffff", b"\xef\xbf\xbf"),
    ("3byte_noncharacter_ufffe", b"\xef\xbf\xbe"),
    ("3byte_bom_ufeff_inside_string", b"\xef\xbb\xbf"),
    ("3byte_line_separator_u2028", b"\xe2\x80\xa8"),
    ("4byte_min_u10000", b"\xf0\x90\x80\x80"),
    ("4byte_emoji_u1f600", b"\xf0\x9f\x98\x80"),
    ("4byte_plane15_uffff", b"\xf3\xbf\xbf\xbf"),
    ("4byte_plane16_u100000", b"\xf4\x80\x80\x80"),
    ("4byte_max_u10ffff", b"\xf4\x8f\xbf\xbf"),
)
for label, seq in good_utf8:
    y("utf8_" + label, string(seq))
y("utf8_every_length_together", string(b"a\xc2\x80\xe0\xa0\x80\xf0\x90\x80\x80z"))
y("utf8_next_to_escapes", string(b"\\n\xc3\xa9\\u00e9\xf0\x9f\x98\x80\\t"))
y("utf8_as_top_level_string", b'"\xe2\x82\xac"')

bad_utf8 = (
    ("stray_continuation_80", b"\x80"),
    ("stray_continuations_two", b"\x80\x80"),
    ("continuation_after_ascii", b"a\x80"),
    ("continuation_after_complete_2byte", b"\xc2\x80\x80"),
    ("continuation_after_complete_4byte", b"\xf0\x90\x80\x80\x80"),
    ("overlong_2byte_c0_80_nul", b"\xc0\x80"),
    ("overlong_2byte_c0_af_slash", b"\xc0\xaf"),
    ("overlong_2byte_c1_bf", b"\xc1\xbf"),
    ("overlong_3byte_e0_80_80", b"\xe0\x80\x80"),
    ("overlong_3byte_e0_9f_bf", b"\xe0\x9f\xbf"),
    ("overlong_4byte_f0_80_80_80", b"\xf0\x80\x80\x80"),
    ("overlong_4byte_f0_8f_bf_bf", b"\xf0\x8f\xbf\xbf"),
    ("surrogate_ud800_ed_a0_80", b"\xed\xa0\x80"),
    ("surrogate_udc00_ed_b0_80", b"\xed\xb0\x80"),
    ("surrogate_udfff_ed_bf_bf", b"\xed\xbf\xbf"),
    ("surrogate_pair_cesu8", b"\xed\xa0\xbd\xed\xb8\x80"),
    ("above_max_u110000_f4_90", b"\xf4\x90\x80\x80"),
    ("lead_f5", b"\xf5\x80\x80\x80"),
    ("lead_f8_5byte", b"\xf8\x88\x80\x80\x80"),
    ("lead_fc_6byte", b"\xfc\x84\x80\x80\x80\x80"),
    ("lead_ff", b"\xff"),
    ("truncated_2byte_before_quote", b"\xc2"),
    ("truncated_3byte_1_of_2", b"\xe1"),
    ("truncated_3byte_2_of_3", b"\xe1\x80"),
    ("truncated_4byte_1_of_4", b"\xf1"),
    ("truncated_4byte_3_of_4", b"\xf1\x80\x80"),
    ("lead_then_ascii_2byte", b"\xc2A"),
    ("lead_then_ascii_3byte_second", b"\xe1A\x80"),
    ("lead_then_ascii_3byte_third", b"\xe1\x80A"),
    ("lead_then_ascii_4byte_fourth", b"\xf1\x80\x80A"),
    ("lead_then_lead", b"\xc2\xc2\x80"),
    ("latin1_e_acute", b"caf\xe9"),
    ("lead_then_backslash_escape", b"\xc2\\n"),
)
for label, seq in bad_utf8:
    n("utf8_" + label, string(seq))
# Truncated at the very end of the input: no closing quote, and the
# sequence itself is cut short.
n("utf8_truncated_2byte_at_eof", b'"\xc2')
n("utf8_truncated_3byte_at_eof", b'"\xe2\x82')
n("utf8_truncated_4byte_at_eof", b'"\xf0\x9f\x98')
n("utf8_invalid_in_key", b'{"\xed\xa0\x80":1}')
n("utf8_invalid_after_valid", string(b"\xc3\xa9\xc3"))

# Outside strings no non-ASCII byte belongs to the grammar.
n("structure_utf8_letter_outside_string", b"[\xc3\xa9]")
n("structure_invalid_utf8_outside_string", b"[\xff]")
n("structure_invalid_utf8_after_value", b"[]\x80")

# ---------------------------------------------------------------- JSON-text (top level)
# JSON-text = ws value ws
y("json_text_string", '"s"')
y("json_text_number", "42")
y("json_text_negative_real", "-0.5e-2")
y("json_text_array", "[1]")
y("json_text_object", '{"a":null}')
y("json_text_scalar_with_ws", "\n\t 7 \r\n")
y("json_text_realistic",
  '{\n  "id": 17,\n  "name": "tunnel",\n  "peers": [\n    {"addr": "10.0.0.1", "port": 51820, "keepalive": true},\n'
  '    {"addr": "::1", "port": 0, "keepalive": false, "note": null}\n  ],\n  "ratio": 0.75e-1\n}\n')
n("json_text_empty", "")
n("json_text_space_only", " ")
n("json_text_all_ws_only", " \t\r\n")
n("json_text_nul_only", b"\x00")
n("json_text_leading_nul", b"\x00[]")
n("json_text_trailing_nul", b"[]\x00")
n("json_text_two_arrays", "[] []")
n("json_text_two_arrays_adjacent", "[][]")
n("json_text_array_then_number", "[]1")
n("json_text_trailing_letter", "[]x")
n("json_text_trailing_comma", "[],")
n("json_text_trailing_close", "{}}")
n("json_text_line_comment_before", "// c\n[]")
n("json_text_line_comment_after", "[] // c")
n("json_text_block_comment_before", "/* c */ []")
n("json_text_block_comment_after", "[] /* c */")
n("json_text_block_comment_inside", "[/* c */]")
n("json_text_block_comment_unclosed", "[] /* c")
n("json_text_hash_comment", "# c\n[]")
n("json_text_jsonp", "callback([])")
n("json_text_backslash", "\\")
n("json_text_json_lines", '{"a":1}\n{"b":2}\n')

# ---------------------------------------------------------------- nesting depth
def arrays(depth, inner=""):
    return "[" * depth + inner + "]" * depth


def objects(depth, inner="{}"):
    # depth objects: {"a":{"a":...{}}}; the innermost {} counts as one level
    return '{"a":' * (depth - 1) + inner + "}" * (depth - 1)


def mixed(depth):
    # alternating [ and {"k": around an empty innermost container
    out, close = "", ""
    for k in range(depth - 1):
        if k % 2 == 0:
            out += "["
            close = "]" + close
        else:
            out += '{"k":'
            close = "}" + close
    return out + ("[]" if (depth - 1) % 2 == 0 else "{}") + close


assert objects(1) == "{}" and objects(2) == '{"a":{}}' and mixed(3) == '[{"k":[]}]'
y("array_depth_2", arrays(2))
y("object_depth_2", '{"a":{}}')
y("array_depth_32_with_values", "[1," * 31 + "[1]" + "]" * 31)
i_accept("depth_64", arrays(DEFAULT_DEPTH))
i_reject("depth_65", arrays(DEFAULT_DEPTH + 1))
i_accept("depth_64_objects", objects(DEFAULT_DEPTH))
i_reject("depth_65_objects", objects(DEFAULT_DEPTH + 1))
i_accept("depth_64_mixed", mixed(DEFAULT_DEPTH))
i_reject("depth_65_mixed", mixed(DEFAULT_DEPTH + 1))
i_accept("depth_64_with_scalar_innermost", arrays(DEFAULT_DEPTH, '"deep"'))
i_reject("depth_65_with_scalar_innermost", arrays(DEFAULT_DEPTH + 1, "0"))
i_accept("depth_64_twice_in_siblings",
         "[" + arrays(DEFAULT_DEPTH - 1) + "," + arrays(DEFAULT_DEPTH - 1) + "]")
i_reject("depth_65_after_shallow_siblings", "[[],{}," + arrays(DEFAULT_DEPTH) + "]")
i_reject("depth_1000", arrays(1000))
i_reject("depth_100000_unclosed", "[" * 100000)
# Unclosed beyond the limit is wrong twice over; still a plain reject.
n("begin_array_unclosed_depth_10", "[" * 10)


def main():
    names = [name for name, _ in cases]
    dupes = sorted({x for x in names if names.count(x) > 1})
    if dupes:
        sys.exit("duplicate case names: " + ", ".join(dupes))
    for name in names:
        ok = name.startswith(("y_", "n_", "i_accept_", "i_reject_"))
        if not ok or not all(c.isalnum() or c == "_" for c in name):
            sys.exit("bad case name: " + name)
    for entry in sorted(os.listdir(HERE)):
        if entry.endswith(".json") and entry[:2] in ("y_", "n_", "i_"):
            os.remove(os.path.join(HERE, entry))
    for name, data in cases:
        with open(os.path.join(HERE, name + ".json"), "wb") as f:
            f.write(data)
    counts = {k: sum(1 for x in names if x.startswith(k)) for k in ("y_", "n_", "i_accept_", "i_reject_")}
    print("wrote %d files: %d y, %d n, %d i_accept, %d i_reject" % (
        len(cases), counts["y_"], counts["n_"], counts["i_accept_"], counts["i_reject_"]))


if __name__ == "__main__":
    main()
