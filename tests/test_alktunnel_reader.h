/* test_alktunnel_reader.h - unit tests for the JSON reader, the address
 * helpers and alkt_strerror of alktunnel.h (greatest API).
 *
 * Included by test_alktunnel.c after ALKTUNNEL_IMPLEMENTATION,
 * "../alktunnel.h" and "greatest.h"; defines alkt_reader_suite and
 * alkt_address_suite. C99 and C++11 clean. */

/* ---- helpers ------------------------------------------------------------ */

/* Validates s[0..len) and checks the result, the sticky error's code and
 * its offset. */
static enum greatest_test_res rd_expect(const char *s, size_t len,
                                        const alkt_json_limits *lim,
                                        int code, size_t offset)
{
    alkt_error e;
    int rc;
    memset(&e, 0x5A, sizeof e);
    rc = alkt_json_validate(s, len, lim, &e);
    if (rc != code || e.code != code || e.offset != offset ||
        e.path[0] != '\0') {
        fprintf(stdout, "\n  input \"%.*s\" (len %lu): want %d@%lu, got "
                        "rc %d err %d@%lu\n",
                (int)(len > 60 ? 60 : len), s, (unsigned long)len, code,
                (unsigned long)offset, rc, e.code, (unsigned long)e.offset);
        FAILm("validate result");
    }
    PASS();
}

typedef struct rd_case {
    const char *s;
    int code;
    size_t offset;
} rd_case;

static enum greatest_test_res rd_table(const rd_case *c, size_t n)
{
    size_t k;
    for (k = 0; k < n; k++)
        CHECK_CALL(rd_expect(c[k].s, strlen(c[k].s), NULL, c[k].code,
                             c[k].offset));
    PASS();
}

#define RD_TABLE(arr) rd_table(arr, sizeof(arr) / sizeof(arr[0]))

/* Builds `depth` nested arrays "[[...]]" into a malloc'd buffer. */
static char *rd_nested(size_t depth, size_t extra_open)
{
    size_t k, n = 2 * depth + extra_open;
    char *b = (char *)malloc(n + 1);
    if (!b)
        return NULL;
    for (k = 0; k < depth + extra_open; k++)
        b[k] = '[';
    for (; k < n; k++)
        b[k] = ']';
    b[n] = '\0';
    return b;
}

/* ---- alkt_json_init / next / error: arguments ------------------------- */

TEST json_init_null_parser(void)
{
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_init(NULL, "1", 1, NULL));
    PASS();
}

TEST json_init_null_json_with_len(void)
{
    alkt_json_parser p;
    alkt_json_token t;
    alkt_error e;
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_init(&p, NULL, 1, NULL));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_error(&p, &e));
    ASSERT_EQ(ALKT_ERR_ARG, e.code);
    ASSERT_EQ((size_t)0, e.offset);
    ASSERT_EQ((size_t)1, e.line);
    ASSERT_EQ((size_t)1, e.column);
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_validate(NULL, 5, NULL, &e));
    ASSERT_EQ(ALKT_ERR_ARG, e.code);
    PASS();
}

TEST json_init_null_json_empty(void)
{
    alkt_json_parser p;
    alkt_json_token t;
    alkt_error e;
    ASSERT_EQ(ALKT_OK, alkt_json_init(&p, NULL, 0, NULL));
    ASSERT_EQ(ALKT_OK, alkt_json_error(&p, &e));
    ASSERT_EQ(ALKT_ERR_UNEXPECTED_END, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_ERR_UNEXPECTED_END, alkt_json_error(&p, &e));
    ASSERT_EQ((size_t)0, e.offset);
    ASSERT_EQ((size_t)1, e.line);
    ASSERT_EQ((size_t)1, e.column);
    PASS();
}

TEST json_init_depth_limit_arg(void)
{
    alkt_json_parser p;
    alkt_json_limits lim;
    alkt_error e;
    alkt_json_token t;
    lim.max_size = 0;
    lim.max_depth = ALKT_JSON_DEPTH_LIMIT + 1;
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_init(&p, "1", 1, &lim));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_validate("1", 1, &lim, &e));
    ASSERT_EQ(ALKT_ERR_ARG, e.code);
    ASSERT_EQ((size_t)0, e.offset);
    lim.max_depth = ALKT_JSON_DEPTH_LIMIT;
    ASSERT_EQ(ALKT_OK, alkt_json_init(&p, "1", 1, &lim));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_JSON_NUMBER, t.type);
    PASS();
}

TEST json_next_error_null_args(void)
{
    alkt_json_parser p;
    alkt_json_token t;
    alkt_error e;
    ASSERT_EQ(ALKT_OK, alkt_json_init(&p, "[]", 2, NULL));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_next(NULL, &t));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_next(&p, NULL));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_error(NULL, &e));
    /* a NULL token did not consume anything or set an error */
    ASSERT_EQ(ALKT_OK, alkt_json_error(&p, NULL));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_JSON_ARRAY, t.type);
    ASSERT_EQ(ALKT_OK, alkt_json_validate("[]", 2, NULL, NULL));
    ASSERT_EQ(ALKT_ERR_SYNTAX, alkt_json_validate("[}", 2, NULL, NULL));
    PASS();
}

TEST json_error_clean_state(void)
{
    alkt_json_parser p;
    alkt_json_token t;
    alkt_error e;
    ASSERT_EQ(ALKT_OK, alkt_json_init(&p, "[\n1]", 4, NULL));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    memset(&e, 0x5A, sizeof e);
    ASSERT_EQ(ALKT_OK, alkt_json_error(&p, &e));
    ASSERT_EQ(ALKT_OK, e.code);
    ASSERT_EQ((size_t)0, e.offset);
    ASSERT_EQ((size_t)1, e.line);
    ASSERT_EQ((size_t)1, e.column);
    ASSERT_STR_EQ("", e.path);
    memset(&e, 0x5A, sizeof e);
    ASSERT_EQ(ALKT_OK, alkt_json_validate(" {\"a\":[1]} ", 11, NULL, &e));
    ASSERT_EQ(ALKT_OK, e.code);
    ASSERT_EQ((size_t)0, e.offset);
    ASSERT_EQ((size_t)1, e.line);
    ASSERT_EQ((size_t)1, e.column);
    ASSERT_STR_EQ("", e.path);
    PASS();
}

/* ---- token stream ----------------------------------------------------- */

typedef struct tok_want {
    alkt_json_type type;
    size_t offset, len, depth, ptr_at;
    unsigned flags;
} tok_want;

static enum greatest_test_res tok_expect(const char *doc, size_t n,
                                         const tok_want *w, size_t count)
{
    alkt_json_parser p;
    alkt_json_token t;
    size_t k;
    ASSERT_EQ(ALKT_OK, alkt_json_init(&p, doc, n, NULL));
    for (k = 0; k < count; k++) {
        memset(&t, 0xA5, sizeof t);
        ASSERT_EQm("next", ALKT_OK, alkt_json_next(&p, &t));
        if (t.type != w[k].type || t.offset != w[k].offset ||
            t.len != w[k].len || t.depth != w[k].depth ||
            t.flags != w[k].flags || t.ptr != doc + w[k].ptr_at) {
            fprintf(stdout, "\n  token %lu: want type %d off %lu len %lu "
                            "depth %lu flags %u ptr %lu; got %d %lu %lu "
                            "%lu %u %ld\n",
                    (unsigned long)k, (int)w[k].type,
                    (unsigned long)w[k].offset, (unsigned long)w[k].len,
                    (unsigned long)w[k].depth, w[k].flags,
                    (unsigned long)w[k].ptr_at, (int)t.type,
                    (unsigned long)t.offset, (unsigned long)t.len,
                    (unsigned long)t.depth, t.flags, (long)(t.ptr - doc));
            FAILm("token mismatch");
        }
    }
    ASSERT_EQ(ALKT_OK, alkt_json_error(&p, NULL));
    PASS();
}

TEST json_tokens_every_type(void)
{
    /* offsets:    0         1         2         3         4         5
     *             0123456789012345678901234567890123456789012345678901234 */
    const char *doc =
        "{\"a\":[-1.5E+2,\"x\\u0041\",true,false,null,{},[]],\"b\\n\":0}";
    static const tok_want w[] = {
        {ALKT_JSON_OBJECT, 0, 1, 0, 0, 0},
        {ALKT_JSON_KEY, 1, 1, 1, 2, 0},
        {ALKT_JSON_ARRAY, 5, 1, 1, 5, 0},
        {ALKT_JSON_NUMBER, 6, 7, 2, 6,
         ALKT_JSON_MINUS | ALKT_JSON_FRACTION | ALKT_JSON_EXPONENT},
        {ALKT_JSON_STRING, 14, 7, 2, 15, ALKT_JSON_ESCAPED},
        {ALKT_JSON_TRUE, 24, 4, 2, 24, 0},
        {ALKT_JSON_FALSE, 29, 5, 2, 29, 0},
        {ALKT_JSON_NULL, 35, 4, 2, 35, 0},
        {ALKT_JSON_OBJECT, 40, 1, 2, 40, 0},
        {ALKT_JSON_OBJECT_END, 41, 1, 2, 41, 0},
        {ALKT_JSON_ARRAY, 43, 1, 2, 43, 0},
        {ALKT_JSON_ARRAY_END, 44, 1, 2, 44, 0},
        {ALKT_JSON_ARRAY_END, 45, 1, 1, 45, 0},
        {ALKT_JSON_KEY, 47, 3, 1, 48, ALKT_JSON_ESCAPED},
        {ALKT_JSON_NUMBER, 53, 1, 1, 53, 0},
        {ALKT_JSON_OBJECT_END, 54, 1, 0, 54, 0},
        {ALKT_JSON_END, 55, 0, 0, 55, 0},
        {ALKT_JSON_END, 55, 0, 0, 55, 0},
        {ALKT_JSON_END, 55, 0, 0, 55, 0},
    };
    ASSERT_EQ((size_t)55, strlen(doc));
    CHECK_CALL(tok_expect(doc, strlen(doc), w, sizeof w / sizeof w[0]));
    PASS();
}

TEST json_tokens_whitespace(void)
{
    /*             0 1 2 3 4 5 6 7 8 9 10 11 ... */
    const char *doc = " \t{ \"k\" :\r\n[ 0 , \"\" ] , \"e\":-0 }\n ";
    static const tok_want w[] = {
        {ALKT_JSON_OBJECT, 2, 1, 0, 2, 0},
        {ALKT_JSON_KEY, 4, 1, 1, 5, 0},
        {ALKT_JSON_ARRAY, 11, 1, 1, 11, 0},
        {ALKT_JSON_NUMBER, 13, 1, 2, 13, 0},
        {ALKT_JSON_STRING, 17, 0, 2, 18, 0},
        {ALKT_JSON_ARRAY_END, 20, 1, 1, 20, 0},
        {ALKT_JSON_KEY, 24, 1, 1, 25, 0},
        {ALKT_JSON_NUMBER, 28, 2, 1, 28, ALKT_JSON_MINUS},
        {ALKT_JSON_OBJECT_END, 31, 1, 0, 31, 0},
        {ALKT_JSON_END, 34, 0, 0, 34, 0},
        {ALKT_JSON_END, 34, 0, 0, 34, 0},
    };
    ASSERT_EQ((size_t)34, strlen(doc));
    CHECK_CALL(tok_expect(doc, strlen(doc), w, sizeof w / sizeof w[0]));
    PASS();
}

TEST json_tokens_scalars(void)
{
    static const tok_want num[] = {
        {ALKT_JSON_NUMBER, 1, 6, 0, 1, ALKT_JSON_FRACTION},
        {ALKT_JSON_END, 8, 0, 0, 8, 0}};
    static const tok_want ex[] = {
        {ALKT_JSON_NUMBER, 0, 3, 0, 0, ALKT_JSON_EXPONENT},
        {ALKT_JSON_END, 3, 0, 0, 3, 0}};
    static const tok_want str[] = {
        {ALKT_JSON_STRING, 0, 4, 0, 1, 0},
        {ALKT_JSON_END, 6, 0, 0, 6, 0}};
    static const tok_want arr[] = {
        {ALKT_JSON_ARRAY, 0, 1, 0, 0, 0},
        {ALKT_JSON_ARRAY, 1, 1, 1, 1, 0},
        {ALKT_JSON_OBJECT, 2, 1, 2, 2, 0},
        {ALKT_JSON_KEY, 3, 0, 3, 4, 0},
        {ALKT_JSON_TRUE, 6, 4, 3, 6, 0},
        {ALKT_JSON_KEY, 11, 1, 3, 12, 0},
        {ALKT_JSON_FALSE, 15, 5, 3, 15, 0},
        {ALKT_JSON_OBJECT_END, 20, 1, 2, 20, 0},
        {ALKT_JSON_ARRAY_END, 21, 1, 1, 21, 0},
        {ALKT_JSON_NULL, 23, 4, 1, 23, 0},
        {ALKT_JSON_ARRAY_END, 27, 1, 0, 27, 0},
        {ALKT_JSON_END, 28, 0, 0, 28, 0}};
    CHECK_CALL(tok_expect(" 12.125 ", 8, num, 2));
    CHECK_CALL(tok_expect("0e5", 3, ex, 2));
    CHECK_CALL(tok_expect("\"abcd\"", 6, str, 2));
    CHECK_CALL(tok_expect("[[{\"\":true,\"b\":false}],null]", 28, arr, 12));
    PASS();
}

TEST json_sticky_error(void)
{
    alkt_json_parser p;
    alkt_json_token t;
    alkt_error e;
    int k;
    ASSERT_EQ(ALKT_OK, alkt_json_init(&p, "[1,\n  x]", 8, NULL));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    for (k = 0; k < 3; k++) {
        memset(&t, 0xA5, sizeof t);
        ASSERT_EQ(ALKT_ERR_SYNTAX, alkt_json_next(&p, &t));
        /* once the error is set, the token is left alone */
        if (k > 0) {
            alkt_json_token same;
            memset(&same, 0xA5, sizeof same);
            ASSERT_EQ(0, memcmp(&same, &t, sizeof t));
        }
        memset(&e, 0x5A, sizeof e);
        ASSERT_EQ(ALKT_ERR_SYNTAX, alkt_json_error(&p, &e));
        ASSERT_EQ(ALKT_ERR_SYNTAX, e.code);
        ASSERT_EQ((size_t)6, e.offset);
        ASSERT_EQ((size_t)2, e.line);
        ASSERT_EQ((size_t)3, e.column);
        ASSERT_STR_EQ("", e.path);
    }
    PASS();
}

TEST json_line_column(void)
{
    alkt_error e;
    const char *a = "{\n  \"a\": [1,\n   2 x]\n}";
    const char *b = "[1,\n2,";
    const char *c = "[\r\r x";
    const char *d = "[\n\n\nx";
    ASSERT_EQ(ALKT_ERR_SYNTAX, alkt_json_validate(a, strlen(a), NULL, &e));
    ASSERT_EQ((size_t)18, e.offset);
    ASSERT_EQ((size_t)3, e.line);
    ASSERT_EQ((size_t)6, e.column);
    ASSERT_EQ(ALKT_ERR_UNEXPECTED_END,
              alkt_json_validate(b, strlen(b), NULL, &e));
    ASSERT_EQ((size_t)6, e.offset);
    ASSERT_EQ((size_t)2, e.line);
    ASSERT_EQ((size_t)3, e.column);
    ASSERT_EQ(ALKT_ERR_SYNTAX, alkt_json_validate(c, strlen(c), NULL, &e));
    ASSERT_EQ((size_t)4, e.offset);
    ASSERT_EQ((size_t)1, e.line);
    ASSERT_EQ((size_t)5, e.column);
    ASSERT_EQ(ALKT_ERR_SYNTAX, alkt_json_validate(d, strlen(d), NULL, &e));
    ASSERT_EQ((size_t)4, e.offset);
    ASSERT_EQ((size_t)4, e.line);
    ASSERT_EQ((size_t)1, e.column);
    PASS();
}

/* ---- every reader error, with its offset ------------------------------ */

TEST json_errors_structure(void)
{
    static const rd_case c[] = {
        {"", ALKT_ERR_UNEXPECTED_END, 0},
        {" \t\r\n", ALKT_ERR_UNEXPECTED_END, 4},
        {"{", ALKT_ERR_UNEXPECTED_END, 1},
        {"{ ", ALKT_ERR_UNEXPECTED_END, 2},
        {"[", ALKT_ERR_UNEXPECTED_END, 1},
        {"[ ", ALKT_ERR_UNEXPECTED_END, 2},
        {"[1", ALKT_ERR_UNEXPECTED_END, 2},
        {"[1 ", ALKT_ERR_UNEXPECTED_END, 3},
        {"[1,", ALKT_ERR_UNEXPECTED_END, 3},
        {"{\"a\"", ALKT_ERR_UNEXPECTED_END, 4},
        {"{\"a\" ", ALKT_ERR_UNEXPECTED_END, 5},
        {"{\"a\":", ALKT_ERR_UNEXPECTED_END, 5},
        {"{\"a\": ", ALKT_ERR_UNEXPECTED_END, 6},
        {"{\"a\":1", ALKT_ERR_UNEXPECTED_END, 6},
        {"{\"a\":1,", ALKT_ERR_UNEXPECTED_END, 7},
        {"{\"a\":1, ", ALKT_ERR_UNEXPECTED_END, 8},
        {"{\"a\" 1}", ALKT_ERR_SYNTAX, 5},
        {"{\"a\",1}", ALKT_ERR_SYNTAX, 4},
        {"{1:2}", ALKT_ERR_SYNTAX, 1},
        {"{ 'a':2}", ALKT_ERR_SYNTAX, 2},
        {"{\"a\":1,}", ALKT_ERR_SYNTAX, 7},
        {"{\"a\":1 \"b\":2}", ALKT_ERR_SYNTAX, 7},
        {"{\"a\":1,,}", ALKT_ERR_SYNTAX, 7},
        {"[1,]", ALKT_ERR_SYNTAX, 3},
        {"[,1]", ALKT_ERR_SYNTAX, 1},
        {"[1 2]", ALKT_ERR_SYNTAX, 3},
        {"[1:2]", ALKT_ERR_SYNTAX, 2},
        {"[1}", ALKT_ERR_SYNTAX, 2},
        {"[}", ALKT_ERR_SYNTAX, 1},
        {"{]", ALKT_ERR_SYNTAX, 1},
        {"{\"a\":1]", ALKT_ERR_SYNTAX, 6},
        {"]", ALKT_ERR_SYNTAX, 0},
        {"}", ALKT_ERR_SYNTAX, 0},
        {",", ALKT_ERR_SYNTAX, 0},
        {":", ALKT_ERR_SYNTAX, 0},
        {"'a'", ALKT_ERR_SYNTAX, 0},
        {"\xEF\xBB\xBF{}", ALKT_ERR_SYNTAX, 0},
        {" \xEF\xBB\xBF", ALKT_ERR_SYNTAX, 1},
        {"\xC3\xA9", ALKT_ERR_SYNTAX, 0},
        {"/*c*/1", ALKT_ERR_SYNTAX, 0},
        {"\f1", ALKT_ERR_SYNTAX, 0},
        {"\v1", ALKT_ERR_SYNTAX, 0},
        {"[1,\f2]", ALKT_ERR_SYNTAX, 3},
        {"1 2", ALKT_ERR_TRAILING_DATA, 2},
        {"1,", ALKT_ERR_TRAILING_DATA, 1},
        {"{}}", ALKT_ERR_TRAILING_DATA, 2},
        {"[] x", ALKT_ERR_TRAILING_DATA, 3},
        {"[]\n[]", ALKT_ERR_TRAILING_DATA, 3},
        {"\"a\"\"b\"", ALKT_ERR_TRAILING_DATA, 3},
        {"1//c", ALKT_ERR_TRAILING_DATA, 1},
        {"null\f", ALKT_ERR_TRAILING_DATA, 4},
        {"{}", ALKT_OK, 0},
        {"[]", ALKT_OK, 0},
        {" [ ] ", ALKT_OK, 0},
        {"{ }", ALKT_OK, 0},
        {"\t\r\n {\t\"a\"\r:\n[ 1 ,\t2 ] ,\"b\" : { } }\t\r\n ", ALKT_OK, 0},
        {"[[],[[]],{},{\"a\":[]}]", ALKT_OK, 0},
    };
    CHECK_CALL(RD_TABLE(c));
    /* NUL bytes are stray bytes, not terminators */
    CHECK_CALL(rd_expect("\0", 1, NULL, ALKT_ERR_SYNTAX, 0));
    CHECK_CALL(rd_expect("1\0", 2, NULL, ALKT_ERR_TRAILING_DATA, 1));
    CHECK_CALL(rd_expect("[1]\0", 4, NULL, ALKT_ERR_TRAILING_DATA, 3));
    CHECK_CALL(rd_expect("[1]", 2, NULL, ALKT_ERR_UNEXPECTED_END, 2));
    PASS();
}

TEST json_errors_numbers(void)
{
    static const rd_case c[] = {
        {"-", ALKT_ERR_UNEXPECTED_END, 1},
        {"[-", ALKT_ERR_UNEXPECTED_END, 2},
        {"[-]", ALKT_ERR_BAD_NUMBER, 2},
        {"-a", ALKT_ERR_BAD_NUMBER, 1},
        {"- 1", ALKT_ERR_BAD_NUMBER, 1},
        {"--1", ALKT_ERR_BAD_NUMBER, 1},
        {"01", ALKT_ERR_BAD_NUMBER, 1},
        {"00", ALKT_ERR_BAD_NUMBER, 1},
        {"-01", ALKT_ERR_BAD_NUMBER, 2},
        {"[01]", ALKT_ERR_BAD_NUMBER, 2},
        {"1.", ALKT_ERR_UNEXPECTED_END, 2},
        {"1.x", ALKT_ERR_BAD_NUMBER, 2},
        {"[1.]", ALKT_ERR_BAD_NUMBER, 3},
        {"1.e5", ALKT_ERR_BAD_NUMBER, 2},
        {".5", ALKT_ERR_SYNTAX, 0},
        {"[.5]", ALKT_ERR_SYNTAX, 1},
        {"-.5", ALKT_ERR_BAD_NUMBER, 1},
        {"1e", ALKT_ERR_UNEXPECTED_END, 2},
        {"1E", ALKT_ERR_UNEXPECTED_END, 2},
        {"1e+", ALKT_ERR_UNEXPECTED_END, 3},
        {"1e-", ALKT_ERR_UNEXPECTED_END, 3},
        {"1.5E", ALKT_ERR_UNEXPECTED_END, 4},
        {"1e+x", ALKT_ERR_BAD_NUMBER, 3},
        {"1ex", ALKT_ERR_BAD_NUMBER, 2},
        {"[1e]", ALKT_ERR_BAD_NUMBER, 3},
        {"[1e-]", ALKT_ERR_BAD_NUMBER, 4},
        {"1e++1", ALKT_ERR_BAD_NUMBER, 3},
        {"+1", ALKT_ERR_SYNTAX, 0},
        {"[+1]", ALKT_ERR_SYNTAX, 1},
        {"0x1", ALKT_ERR_BAD_NUMBER, 1},
        {"0X1", ALKT_ERR_BAD_NUMBER, 1},
        {"-0x1", ALKT_ERR_BAD_NUMBER, 2},
        {"12x", ALKT_ERR_BAD_NUMBER, 2},
        {"1.2.3", ALKT_ERR_BAD_NUMBER, 3},
        {"1e5e5", ALKT_ERR_BAD_NUMBER, 3},
        {"1e5E5", ALKT_ERR_BAD_NUMBER, 3},
        {"1e5.5", ALKT_ERR_BAD_NUMBER, 3},
        {"1.5e3.", ALKT_ERR_BAD_NUMBER, 5},
        {"1-", ALKT_ERR_BAD_NUMBER, 1},
        {"1+", ALKT_ERR_BAD_NUMBER, 1},
        {"0-", ALKT_ERR_BAD_NUMBER, 1},
        {"12a", ALKT_ERR_TRAILING_DATA, 2},
        {"[1a]", ALKT_ERR_SYNTAX, 2},
        {"NaN", ALKT_ERR_SYNTAX, 0},
        {"Infinity", ALKT_ERR_SYNTAX, 0},
        {"-Infinity", ALKT_ERR_BAD_NUMBER, 1},
        {"0", ALKT_OK, 0},
        {"-0", ALKT_OK, 0},
        {"-0.0", ALKT_OK, 0},
        {"1.5e-3", ALKT_OK, 0},
        {"1E+3", ALKT_OK, 0},
        {"0e0", ALKT_OK, 0},
        {"0.0001", ALKT_OK, 0},
        {"123456789012345678901234567890", ALKT_OK, 0},
        {"-9.87654321e-300", ALKT_OK, 0},
        {"[0,-0,1,9,10,99,1.0,1e9]", ALKT_OK, 0},
        {"{\"a\":-1}", ALKT_OK, 0},
    };
    CHECK_CALL(RD_TABLE(c));
    PASS();
}

TEST json_errors_literals(void)
{
    static const rd_case c[] = {
        {"t", ALKT_ERR_UNEXPECTED_END, 1},
        {"tru", ALKT_ERR_UNEXPECTED_END, 3},
        {"fals", ALKT_ERR_UNEXPECTED_END, 4},
        {"nul", ALKT_ERR_UNEXPECTED_END, 3},
        {"[tru", ALKT_ERR_UNEXPECTED_END, 4},
        {"trux", ALKT_ERR_SYNTAX, 3},
        {"tRue", ALKT_ERR_SYNTAX, 1},
        {"nulL", ALKT_ERR_SYNTAX, 3},
        {"nan", ALKT_ERR_SYNTAX, 1},
        {"falsy", ALKT_ERR_SYNTAX, 4},
        {"fa", ALKT_ERR_UNEXPECTED_END, 2},
        {"[tru]", ALKT_ERR_SYNTAX, 4},
        {"True", ALKT_ERR_SYNTAX, 0},
        {"NULL", ALKT_ERR_SYNTAX, 0},
        {"undefined", ALKT_ERR_SYNTAX, 0},
        {"truex", ALKT_ERR_TRAILING_DATA, 4},
        {"nullnull", ALKT_ERR_TRAILING_DATA, 4},
        {"[true false]", ALKT_ERR_SYNTAX, 6},
        {"true", ALKT_OK, 0},
        {"false", ALKT_OK, 0},
        {"null", ALKT_OK, 0},
        {" [true,false,null] ", ALKT_OK, 0},
    };
    CHECK_CALL(RD_TABLE(c));
    PASS();
}

TEST json_errors_strings(void)
{
    static const rd_case c[] = {
        {"\"", ALKT_ERR_UNEXPECTED_END, 1},
        {"\"abc", ALKT_ERR_UNEXPECTED_END, 4},
        {"[\"abcdefghijklmnopq", ALKT_ERR_UNEXPECTED_END, 19},
        {"\"a\\", ALKT_ERR_UNEXPECTED_END, 3},
        {"\"\\u", ALKT_ERR_UNEXPECTED_END, 3},
        {"\"\\u12", ALKT_ERR_UNEXPECTED_END, 5},
        {"\"\\u123", ALKT_ERR_UNEXPECTED_END, 6},
        {"\"\\u1234", ALKT_ERR_UNEXPECTED_END, 7},
        {"\"\\n", ALKT_ERR_UNEXPECTED_END, 3},
        {"\"\\u12G4\"", ALKT_ERR_BAD_ESCAPE, 5},
        {"\"\\uG234\"", ALKT_ERR_BAD_ESCAPE, 3},
        {"\"\\u123g\"", ALKT_ERR_BAD_ESCAPE, 6},
        {"\"\\u12\"", ALKT_ERR_BAD_ESCAPE, 5},
        {"\"\\x\"", ALKT_ERR_BAD_ESCAPE, 2},
        {"\"\\U0041\"", ALKT_ERR_BAD_ESCAPE, 2},
        {"\"\\'\"", ALKT_ERR_BAD_ESCAPE, 2},
        {"\"\\a\"", ALKT_ERR_BAD_ESCAPE, 2},
        {"\"\\0\"", ALKT_ERR_BAD_ESCAPE, 2},
        {"\"ab\\ \"", ALKT_ERR_BAD_ESCAPE, 4},
        {"\"0123456789abcdef\\q\"", ALKT_ERR_BAD_ESCAPE, 18},
        {"\"a\x01\"", ALKT_ERR_CONTROL_CHAR, 2},
        {"\"\x1f\"", ALKT_ERR_CONTROL_CHAR, 1},
        {"\"\t\"", ALKT_ERR_CONTROL_CHAR, 1},
        {"\"\n\"", ALKT_ERR_CONTROL_CHAR, 1},
        {"\"0123456789\x1f\"", ALKT_ERR_CONTROL_CHAR, 11},
        {"\"01234567\r\"", ALKT_ERR_CONTROL_CHAR, 9},
        {"{\"k\x02\":1}", ALKT_ERR_CONTROL_CHAR, 3},
        {"\"\x80\"", ALKT_ERR_BAD_UTF8, 1},
        {"\"\xBF\"", ALKT_ERR_BAD_UTF8, 1},
        {"\"\xC0\x80\"", ALKT_ERR_BAD_UTF8, 1},
        {"\"\xC1\xBF\"", ALKT_ERR_BAD_UTF8, 1},
        {"\"\xC2\"", ALKT_ERR_BAD_UTF8, 2},
        {"\"\xC2\xC0\"", ALKT_ERR_BAD_UTF8, 2},
        {"\"\xC2", ALKT_ERR_UNEXPECTED_END, 2},
        {"\"\xE0\x80\x80\"", ALKT_ERR_BAD_UTF8, 2},
        {"\"\xE0\x9F\xBF\"", ALKT_ERR_BAD_UTF8, 2},
        {"\"\xED\xA0\x80\"", ALKT_ERR_BAD_UTF8, 2},
        {"\"\xED\xBF\xBF\"", ALKT_ERR_BAD_UTF8, 2},
        {"\"\xE2\x82\"", ALKT_ERR_BAD_UTF8, 3},
        {"\"\xE2\x82", ALKT_ERR_UNEXPECTED_END, 3},
        {"\"\xE2", ALKT_ERR_UNEXPECTED_END, 2},
        {"\"\xF0\x80\x80\x80\"", ALKT_ERR_BAD_UTF8, 2},
        {"\"\xF0\x8F\xBF\xBF\"", ALKT_ERR_BAD_UTF8, 2},
        {"\"\xF4\x90\x80\x80\"", ALKT_ERR_BAD_UTF8, 2},
        {"\"\xF5\x80\x80\x80\"", ALKT_ERR_BAD_UTF8, 1},
        {"\"\xF8\x88\x80\x80\x80\"", ALKT_ERR_BAD_UTF8, 1},
        {"\"\xFF\"", ALKT_ERR_BAD_UTF8, 1},
        {"\"\xF0\x9F\x98\"", ALKT_ERR_BAD_UTF8, 4},
        {"\"\xF0\x9F\x98", ALKT_ERR_UNEXPECTED_END, 4},
        {"\"0123456789\x80\"", ALKT_ERR_BAD_UTF8, 11},
        {"\"01234567\xC3\xA9\xC3\"", ALKT_ERR_BAD_UTF8, 12},
        {"\"\"", ALKT_OK, 0},
        {"\"\x7f\"", ALKT_OK, 0},
        {"\" ~\"", ALKT_OK, 0},
        {"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\uABCD\\uabcd\"", ALKT_OK, 0},
        {"\"\\uD800\"", ALKT_OK, 0},
        {"\"\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xED\x9F\xBF\xEE\x80\x80"
         "\xF0\x90\x80\x80\xF4\x8F\xBF\xBF\xE1\x80\x80\xF1\x80\x80\x80\"",
         ALKT_OK, 0},
        {"\"0123456789abcdefghijklmnopqrstuv\"", ALKT_OK, 0},
    };
    CHECK_CALL(RD_TABLE(c));
    PASS();
}

/* The string scanner's 8-byte fast path: a stop byte at every position. */
TEST json_string_stop_positions(void)
{
    char buf[40];
    size_t pos, k;
    for (pos = 1; pos < 30; pos++) {
        for (k = 0; k < sizeof buf; k++)
            buf[k] = 'a';
        buf[0] = '"';
        buf[pos] = '"';
        CHECK_CALL(rd_expect(buf, pos + 1, NULL, ALKT_OK, 0));
        CHECK_CALL(rd_expect(buf, pos + 2, NULL, ALKT_ERR_TRAILING_DATA,
                             pos + 1));
        buf[pos] = '\x1f';
        CHECK_CALL(rd_expect(buf, 35, NULL, ALKT_ERR_CONTROL_CHAR, pos));
        buf[pos] = '\x80';
        CHECK_CALL(rd_expect(buf, 35, NULL, ALKT_ERR_BAD_UTF8, pos));
        buf[pos] = '\\';
        CHECK_CALL(rd_expect(buf, 35, NULL, ALKT_ERR_BAD_ESCAPE, pos + 1));
        buf[pos] = ' ';
        CHECK_CALL(rd_expect(buf, 35, NULL, ALKT_ERR_UNEXPECTED_END, 35));
    }
    PASS();
}

/* ---- limits ----------------------------------------------------------- */

TEST json_size_limit_custom(void)
{
    alkt_json_limits lim;
    alkt_json_parser p;
    alkt_json_token t;
    alkt_error e;
    lim.max_depth = 0;
    lim.max_size = 5;
    CHECK_CALL(rd_expect("[1,2]", 5, &lim, ALKT_OK, 0));
    CHECK_CALL(rd_expect("[1,23]", 6, &lim, ALKT_ERR_TOO_LARGE, 5));
    CHECK_CALL(rd_expect("[1,\n2 ]", 7, &lim, ALKT_ERR_TOO_LARGE, 5));
    ASSERT_EQ(ALKT_ERR_TOO_LARGE, alkt_json_init(&p, "[1,\n2 ]", 7, &lim));
    memset(&t, 0xA5, sizeof t);
    ASSERT_EQ(ALKT_ERR_TOO_LARGE, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_ERR_TOO_LARGE, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_ERR_TOO_LARGE, alkt_json_error(&p, &e));
    ASSERT_EQ((size_t)5, e.offset);
    /* not counted: the refusal reads none of the input */
    ASSERT_EQ((size_t)0, e.line);
    ASSERT_EQ((size_t)0, e.column);
    lim.max_size = 1;
    CHECK_CALL(rd_expect("1", 1, &lim, ALKT_OK, 0));
    CHECK_CALL(rd_expect("12", 2, &lim, ALKT_ERR_TOO_LARGE, 1));
    PASS();
}

TEST json_size_limit_default(void)
{
    size_t n = ALKT_JSON_SIZE_DEFAULT + 1;
    char *b = (char *)malloc(n);
    alkt_json_limits lim;
    enum greatest_test_res r;
    ASSERT(b != NULL);
    memset(b, ' ', n);
    b[0] = '1';
    lim.max_depth = 0;
    lim.max_size = 0;
    r = rd_expect(b, n - 1, NULL, ALKT_OK, 0);
    if (r == GREATEST_TEST_RES_PASS)
        r = rd_expect(b, n, NULL, ALKT_ERR_TOO_LARGE, n - 1);
    if (r == GREATEST_TEST_RES_PASS)
        r = rd_expect(b, n - 1, &lim, ALKT_OK, 0);
    if (r == GREATEST_TEST_RES_PASS)
        r = rd_expect(b, n, &lim, ALKT_ERR_TOO_LARGE, n - 1);
    free(b);
    CHECK_CALL(r);
    PASS();
}

static enum greatest_test_res depth_case(const alkt_json_limits *lim,
                                         size_t ok_depth)
{
    char *b = rd_nested(ok_depth, 0);
    char *c = rd_nested(ok_depth + 1, 0);
    enum greatest_test_res r = GREATEST_TEST_RES_FAIL;
    if (b && c) {
        r = rd_expect(b, strlen(b), lim, ALKT_OK, 0);
        if (r == GREATEST_TEST_RES_PASS)
            r = rd_expect(c, strlen(c), lim, ALKT_ERR_TOO_DEEP, ok_depth);
    }
    free(b);
    free(c);
    CHECK_CALL(r);
    PASS();
}

TEST json_depth_default(void)
{
    alkt_json_limits lim;
    lim.max_depth = 0;
    lim.max_size = 0;
    CHECK_CALL(depth_case(NULL, 64));
    CHECK_CALL(depth_case(&lim, 64));
    PASS();
}

TEST json_depth_custom(void)
{
    alkt_json_limits lim;
    lim.max_size = 0;
    lim.max_depth = 1;
    CHECK_CALL(depth_case(&lim, 1));
    CHECK_CALL(rd_expect("{\"a\":{}}", 8, &lim, ALKT_ERR_TOO_DEEP, 5));
    CHECK_CALL(rd_expect("[1,{}]", 6, &lim, ALKT_ERR_TOO_DEEP, 3));
    CHECK_CALL(rd_expect("[[]]", 4, &lim, ALKT_ERR_TOO_DEEP, 1));
    CHECK_CALL(rd_expect("1", 1, &lim, ALKT_OK, 0));
    lim.max_depth = 2;
    CHECK_CALL(depth_case(&lim, 2));
    CHECK_CALL(rd_expect("[{\"a\":{}}]", 10, &lim, ALKT_ERR_TOO_DEEP, 6));
    CHECK_CALL(rd_expect("[[],{},[{}]]", 12, &lim, ALKT_ERR_TOO_DEEP, 8));
    lim.max_depth = 65;
    CHECK_CALL(depth_case(&lim, 65));
    lim.max_depth = ALKT_JSON_DEPTH_LIMIT;
    CHECK_CALL(depth_case(&lim, ALKT_JSON_DEPTH_LIMIT));
    PASS();
}

/* Mixed nesting: each level remembers whether it is an object or an
 * array, across byte boundaries of the level bitmap. */
TEST json_depth_mixed_kinds(void)
{
    char doc[4096];
    size_t levels, o, k, wrong;
    alkt_json_limits lim;
    lim.max_size = 0;
    lim.max_depth = 40;
    for (levels = 1; levels <= 40; levels++) {
        for (wrong = 0; wrong <= levels; wrong++) {
            size_t bad_at = 0;
            o = 0;
            for (k = 0; k < levels; k++) {
                /* pattern: object if bit k of 0x...2d5 is set */
                if ((0x9B2D5u >> (k % 20)) & 1u) {
                    memcpy(doc + o, "{\"k\":", 5);
                    o += 5;
                } else {
                    doc[o++] = '[';
                }
            }
            doc[o++] = '0';
            for (k = levels; k-- > 0;) {
                int obj = (int)((0x9B2D5u >> (k % 20)) & 1u);
                char close = obj ? '}' : ']';
                if (wrong == k + 1) {
                    bad_at = o;
                    close = obj ? ']' : '}';
                }
                doc[o++] = close;
            }
            CHECK_CALL(rd_expect(doc, o, &lim,
                                 wrong ? ALKT_ERR_SYNTAX : ALKT_OK,
                                 wrong ? bad_at : 0));
        }
    }
    PASS();
}

/* ---- alkt_json_unescape ----------------------------------------------- */

/* Unescapes raw (NUL-terminated) with capacity cap; checks the result,
 * *out_len and the bytes (want, want_len) or *bad_offset. */
static enum greatest_test_res unesc_expect(const char *raw, size_t cap,
                                           int code, const char *want,
                                           size_t want_len, size_t bad)
{
    char *out = (char *)malloc(cap ? cap : 1);
    size_t out_len = 12345, bad_off = 54321;
    int rc;
    ASSERT(out != NULL);
    rc = alkt_json_unescape(raw, strlen(raw), out, cap, &out_len, &bad_off);
    if (rc != code || out_len != want_len ||
        memcmp(out, want, want_len) != 0 ||
        bad_off != (code == ALKT_OK ? (size_t)54321 : bad)) {
        fprintf(stdout, "\n  raw \"%s\" cap %lu: want %d len %lu bad %lu; "
                        "got %d len %lu bad %lu\n",
                raw, (unsigned long)cap, code, (unsigned long)want_len,
                (unsigned long)bad, rc, (unsigned long)out_len,
                (unsigned long)bad_off);
        free(out);
        FAILm("unescape result");
    }
    free(out);
    PASS();
}

/* OK at cap == needed, STRING_TOO_LONG at needed - 1 with `fit` bytes
 * written and the failing item at `bad`. */
static enum greatest_test_res unesc_ok(const char *raw, const char *want,
                                       size_t want_len, size_t fit,
                                       size_t bad)
{
    CHECK_CALL(unesc_expect(raw, want_len, ALKT_OK, want, want_len, 0));
    CHECK_CALL(unesc_expect(raw, want_len + 7, ALKT_OK, want, want_len, 0));
    if (want_len)
        CHECK_CALL(unesc_expect(raw, want_len - 1, ALKT_ERR_STRING_TOO_LONG,
                                want, fit, bad));
    PASS();
}

TEST unescape_simple_escapes(void)
{
    CHECK_CALL(unesc_ok("\\\"", "\"", 1, 0, 0));
    CHECK_CALL(unesc_ok("\\\\", "\\", 1, 0, 0));
    CHECK_CALL(unesc_ok("\\/", "/", 1, 0, 0));
    CHECK_CALL(unesc_ok("\\b", "\b", 1, 0, 0));
    CHECK_CALL(unesc_ok("\\f", "\f", 1, 0, 0));
    CHECK_CALL(unesc_ok("\\n", "\n", 1, 0, 0));
    CHECK_CALL(unesc_ok("\\r", "\r", 1, 0, 0));
    CHECK_CALL(unesc_ok("\\t", "\t", 1, 0, 0));
    CHECK_CALL(unesc_ok("a\\\"b\\\\c\\/d\\be\\ff\\ng\\rh\\ti",
                        "a\"b\\c/d\be\ff\ng\rh\ti", 17, 16, 24));
    CHECK_CALL(unesc_ok("", "", 0, 0, 0));
    CHECK_CALL(unesc_ok("plain", "plain", 5, 0, 0));
    CHECK_CALL(unesc_ok("ab\\ncd", "ab\ncd", 5, 3, 4));
    CHECK_CALL(unesc_ok("\\\\\\\\", "\\\\", 2, 1, 2));
    CHECK_CALL(unesc_ok("\xC3\xA9\\t", "\xC3\xA9\t", 3, 2, 2));
    PASS();
}

TEST unescape_unicode_boundaries(void)
{
    CHECK_CALL(unesc_ok("\\u0041", "A", 1, 0, 0));
    CHECK_CALL(unesc_ok("\\u0000", "\0", 1, 0, 0));
    CHECK_CALL(unesc_ok("\\u007F", "\x7F", 1, 0, 0));
    CHECK_CALL(unesc_ok("\\u0080", "\xC2\x80", 2, 0, 0));
    CHECK_CALL(unesc_ok("\\u00e9", "\xC3\xA9", 2, 0, 0));
    CHECK_CALL(unesc_ok("\\u00E9", "\xC3\xA9", 2, 0, 0));
    CHECK_CALL(unesc_ok("\\u07FF", "\xDF\xBF", 2, 0, 0));
    CHECK_CALL(unesc_ok("\\u0800", "\xE0\xA0\x80", 3, 0, 0));
    CHECK_CALL(unesc_ok("\\u20AC", "\xE2\x82\xAC", 3, 0, 0));
    CHECK_CALL(unesc_ok("\\uD7FF", "\xED\x9F\xBF", 3, 0, 0));
    CHECK_CALL(unesc_ok("\\uE000", "\xEE\x80\x80", 3, 0, 0));
    CHECK_CALL(unesc_ok("\\uFFFF", "\xEF\xBF\xBF", 3, 0, 0));
    CHECK_CALL(unesc_ok("\\ufffF", "\xEF\xBF\xBF", 3, 0, 0));
    CHECK_CALL(unesc_ok("\\uD800\\uDC00", "\xF0\x90\x80\x80", 4, 0, 0));
    CHECK_CALL(unesc_ok("\\ud83d\\ude00", "\xF0\x9F\x98\x80", 4, 0, 0));
    CHECK_CALL(unesc_ok("\\uDBFF\\uDFFF", "\xF4\x8F\xBF\xBF", 4, 0, 0));
    CHECK_CALL(unesc_ok("\\uD800\\uDFFF", "\xF0\x90\x8F\xBF", 4, 0, 0));
    CHECK_CALL(unesc_ok("\\uDBFF\\uDC00", "\xF4\x8F\xB0\x80", 4, 0, 0));
    CHECK_CALL(unesc_ok("x\\uD83D\\uDE00", "x\xF0\x9F\x98\x80", 5, 1, 1));
    CHECK_CALL(unesc_ok("\\uD83D\\uDE00y", "\xF0\x9F\x98\x80y", 5, 4, 12));
    CHECK_CALL(unesc_ok("\\u0041\\u00e9\\u20ac\\uD800\\uDC00",
                        "A\xC3\xA9\xE2\x82\xAC\xF0\x90\x80\x80", 10, 6,
                        18));
    PASS();
}

TEST unescape_cap_boundaries(void)
{
    /* every capacity below the need fails after the last whole item */
    CHECK_CALL(unesc_expect("abc\\u20ACd", 0, ALKT_ERR_STRING_TOO_LONG, "",
                            0, 0));
    CHECK_CALL(unesc_expect("abc\\u20ACd", 2, ALKT_ERR_STRING_TOO_LONG, "",
                            0, 0));
    CHECK_CALL(unesc_expect("abc\\u20ACd", 3, ALKT_ERR_STRING_TOO_LONG,
                            "abc", 3, 3));
    CHECK_CALL(unesc_expect("abc\\u20ACd", 5, ALKT_ERR_STRING_TOO_LONG,
                            "abc", 3, 3));
    CHECK_CALL(unesc_expect("abc\\u20ACd", 6, ALKT_ERR_STRING_TOO_LONG,
                            "abc\xE2\x82\xAC", 6, 9));
    CHECK_CALL(unesc_expect("abc\\u20ACd", 7, ALKT_OK, "abc\xE2\x82\xAC" "d",
                            7, 0));
    PASS();
}

TEST unescape_null_args(void)
{
    char out[8];
    size_t n = 99, bad = 77;
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_unescape(NULL, 1, out, 8, &n, &bad));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_unescape("a", 1, NULL, 8, &n, &bad));
    ASSERT_EQ((size_t)99, n);
    ASSERT_EQ((size_t)77, bad);
    ASSERT_EQ(ALKT_OK, alkt_json_unescape(NULL, 0, NULL, 0, &n, &bad));
    ASSERT_EQ((size_t)0, n);
    ASSERT_EQ((size_t)77, bad);
    ASSERT_EQ(ALKT_ERR_STRING_TOO_LONG,
              alkt_json_unescape("a", 1, NULL, 0, &n, &bad));
    ASSERT_EQ((size_t)0, n);
    ASSERT_EQ((size_t)0, bad);
    /* out_len and bad_offset are optional */
    ASSERT_EQ(ALKT_OK, alkt_json_unescape("a\\n", 3, out, 8, NULL, NULL));
    ASSERT_EQ('a', out[0]);
    ASSERT_EQ('\n', out[1]);
    ASSERT_EQ(ALKT_ERR_BAD_ESCAPE,
              alkt_json_unescape("\\x", 2, out, 8, NULL, NULL));
    ASSERT_EQ(ALKT_ERR_STRING_TOO_LONG,
              alkt_json_unescape("abc", 3, out, 2, NULL, NULL));
    /* raw is read only up to len */
    ASSERT_EQ(ALKT_OK, alkt_json_unescape("ab\\q", 2, out, 2, &n, &bad));
    ASSERT_EQ((size_t)2, n);
    PASS();
}

TEST unescape_bad_surrogates(void)
{
    CHECK_CALL(unesc_expect("\\uDC00", 8, ALKT_ERR_BAD_SURROGATE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\uDFFF", 8, ALKT_ERR_BAD_SURROGATE, "", 0, 0));
    CHECK_CALL(unesc_expect("ab\\udc00", 8, ALKT_ERR_BAD_SURROGATE, "ab", 2,
                            2));
    CHECK_CALL(unesc_expect("\\uD800", 8, ALKT_ERR_BAD_SURROGATE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\uDBFF", 8, ALKT_ERR_BAD_SURROGATE, "", 0, 0));
    CHECK_CALL(unesc_expect("x\\uD800", 8, ALKT_ERR_BAD_SURROGATE, "x", 1,
                            1));
    CHECK_CALL(unesc_expect("\\uD800x", 8, ALKT_ERR_BAD_SURROGATE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\uD800\\", 8, ALKT_ERR_BAD_SURROGATE, "", 0,
                            0));
    CHECK_CALL(unesc_expect("\\uD800\\n", 8, ALKT_ERR_BAD_SURROGATE, "", 0,
                            0));
    /* a broken escape after a high surrogate is not reader text: it is a
     * bad escape, reported at the second escape */
    CHECK_CALL(unesc_expect("\\uD800\\u", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 6));
    CHECK_CALL(unesc_expect("\\uD800\\uDC0", 8, ALKT_ERR_BAD_ESCAPE, "", 0,
                            6));
    CHECK_CALL(unesc_expect("\\uD800\\uZZZZ", 8, ALKT_ERR_BAD_ESCAPE, "", 0,
                            6));
    CHECK_CALL(unesc_expect("\\uD800\\uD800", 8, ALKT_ERR_BAD_SURROGATE, "",
                            0, 0));
    CHECK_CALL(unesc_expect("\\uD800\\uDBFF", 8, ALKT_ERR_BAD_SURROGATE, "",
                            0, 0));
    CHECK_CALL(unesc_expect("\\uD800\\uE000", 8, ALKT_ERR_BAD_SURROGATE, "",
                            0, 0));
    CHECK_CALL(unesc_expect("\\uD800\\u0041", 8, ALKT_ERR_BAD_SURROGATE, "",
                            0, 0));
    CHECK_CALL(unesc_expect("\\uD800\\uD800\\uDC00", 8,
                            ALKT_ERR_BAD_SURROGATE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\u0041\\uDC00\\uD800", 8,
                            ALKT_ERR_BAD_SURROGATE, "A", 1, 6));
    /* a surrogate is refused even when nothing fits */
    CHECK_CALL(unesc_expect("\\uDC00", 0, ALKT_ERR_BAD_SURROGATE, "", 0, 0));
    PASS();
}

TEST unescape_bad_escapes(void)
{
    CHECK_CALL(unesc_expect("\\x", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("a\\", 8, ALKT_ERR_BAD_ESCAPE, "a", 1, 1));
    CHECK_CALL(unesc_expect("ab\\q", 8, ALKT_ERR_BAD_ESCAPE, "ab", 2, 2));
    CHECK_CALL(unesc_expect("\\U0041", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\u", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\u12", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\u123", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\u12G4", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\uG123", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\u123g", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\u:123", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\u/123", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\u@123", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\u`123", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("\\u12 4", 8, ALKT_ERR_BAD_ESCAPE, "", 0, 0));
    CHECK_CALL(unesc_expect("x\\t\\0", 8, ALKT_ERR_BAD_ESCAPE, "x\t", 2, 3));
    /* a bad escape is reported even where the output is full */
    CHECK_CALL(unesc_expect("ab\\q", 2, ALKT_ERR_BAD_ESCAPE, "ab", 2, 2));
    PASS();
}

/* Every hex digit value, both cases, through the unescaper. */
TEST unescape_hex_digits(void)
{
    static const char digits[] = "0123456789abcdefABCDEF";
    size_t k;
    for (k = 0; k < 22; k++) {
        char raw[7];
        char out[4];
        size_t n = 0;
        unsigned v = (unsigned)(k < 16 ? k : k - 6);
        raw[0] = '\\';
        raw[1] = 'u';
        raw[2] = '0';
        raw[3] = '0';
        raw[4] = '0';
        raw[5] = digits[k];
        raw[6] = '\0';
        ASSERT_EQ(ALKT_OK, alkt_json_unescape(raw, 6, out, 4, &n, NULL));
        ASSERT_EQ((size_t)1, n);
        ASSERT_EQ(v, (unsigned)(unsigned char)out[0]);
        raw[5] = '0';
        raw[2] = digits[k];
        ASSERT_EQ(ALKT_OK, alkt_json_unescape(raw, 6, out, 4, &n, NULL));
        ASSERT_EQ(v < 1 ? (size_t)1 : v < 8 ? (size_t)3 : (size_t)3, n);
        if (v == 0) {
            ASSERT_EQ(0, out[0]);
        } else {
            unsigned cp = v << 12;
            ASSERT_EQ(0xE0u | (cp >> 12), (unsigned)(unsigned char)out[0]);
            ASSERT_EQ(0x80u, (unsigned)(unsigned char)out[1]);
            ASSERT_EQ(0x80u, (unsigned)(unsigned char)out[2]);
        }
    }
    PASS();
}

/* Strings straight from the reader round-trip through the unescaper. */
TEST unescape_reader_tokens(void)
{
    const char *doc = "{\"k\\u00e9y\":\"v\\\"al\\u263A\",\"p\":\"plain\"}";
    alkt_json_parser p;
    alkt_json_token t;
    char out[16];
    size_t n;
    ASSERT_EQ(ALKT_OK, alkt_json_init(&p, doc, strlen(doc), NULL));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_JSON_KEY, t.type);
    ASSERT_EQ(ALKT_OK, alkt_json_unescape(t.ptr, t.len, out, 16, &n, NULL));
    ASSERT_EQ((size_t)4, n);
    ASSERT_EQ(0, memcmp(out, "k\xC3\xA9y", 4));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_JSON_STRING, t.type);
    ASSERT_EQ(ALKT_JSON_ESCAPED, t.flags);
    ASSERT_EQ(ALKT_OK, alkt_json_unescape(t.ptr, t.len, out, 16, &n, NULL));
    ASSERT_EQ((size_t)7, n);
    ASSERT_EQ(0, memcmp(out, "v\"al\xE2\x98\xBA", 7));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(0u, t.flags);
    ASSERT_EQ(ALKT_OK, alkt_json_unescape(t.ptr, t.len, out, 16, &n, NULL));
    ASSERT_EQ((size_t)5, n);
    ASSERT_EQ(0, memcmp(out, "plain", 5));
    PASS();
}

/* ---- alkt_json_number_u64 / _i64 ------------------------------------- */

/* The single top-level token of doc. */
static int num_token(const char *doc, alkt_json_token *t)
{
    alkt_json_parser p;
    int rc = alkt_json_init(&p, doc, strlen(doc), NULL);
    if (rc == ALKT_OK)
        rc = alkt_json_next(&p, t);
    return rc;
}

static enum greatest_test_res u64_expect(const char *doc, int code,
                                         uint64_t want)
{
    alkt_json_token t;
    uint64_t v = 0x5A5A5A5A5A5A5A5Au;
    int rc;
    ASSERT_EQm(doc, ALKT_OK, num_token(doc, &t));
    rc = alkt_json_number_u64(&t, &v);
    ASSERT_EQm(doc, code, rc);
    ASSERT_EQm(doc, code == ALKT_OK ? want : 0x5A5A5A5A5A5A5A5Au, v);
    PASS();
}

static enum greatest_test_res i64_expect(const char *doc, int code,
                                         int64_t want)
{
    alkt_json_token t;
    int64_t v = 0x5A5A5A5A5A5A5A5A;
    int rc;
    ASSERT_EQm(doc, ALKT_OK, num_token(doc, &t));
    rc = alkt_json_number_i64(&t, &v);
    ASSERT_EQm(doc, code, rc);
    ASSERT_EQm(doc, code == ALKT_OK ? want : 0x5A5A5A5A5A5A5A5A, v);
    PASS();
}

TEST number_u64_values(void)
{
    CHECK_CALL(u64_expect("0", ALKT_OK, 0));
    CHECK_CALL(u64_expect("-0", ALKT_OK, 0));
    CHECK_CALL(u64_expect("7", ALKT_OK, 7));
    CHECK_CALL(u64_expect("65535", ALKT_OK, 65535));
    CHECK_CALL(u64_expect("1234567890123456789", ALKT_OK,
                          1234567890123456789u));
    CHECK_CALL(u64_expect("9999999999999999999", ALKT_OK,
                          9999999999999999999u));
    CHECK_CALL(u64_expect("10000000000000000000", ALKT_OK,
                          10000000000000000000u));
    CHECK_CALL(u64_expect("18446744073709551609", ALKT_OK,
                          18446744073709551609u));
    CHECK_CALL(u64_expect("18446744073709551615", ALKT_OK, UINT64_MAX));
    CHECK_CALL(u64_expect("18446744073709551616", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(u64_expect("18446744073709551620", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(u64_expect("18446744073709551705", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(u64_expect("99999999999999999999", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(u64_expect("100000000000000000000", ALKT_ERR_OUT_OF_RANGE,
                          0));
    CHECK_CALL(u64_expect("36893488147419103232", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(u64_expect("-1", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(u64_expect("-18446744073709551615", ALKT_ERR_OUT_OF_RANGE,
                          0));
    CHECK_CALL(u64_expect("-18446744073709551616", ALKT_ERR_OUT_OF_RANGE,
                          0));
    CHECK_CALL(u64_expect("1.0", ALKT_ERR_NOT_INTEGER, 0));
    CHECK_CALL(u64_expect("1e3", ALKT_ERR_NOT_INTEGER, 0));
    CHECK_CALL(u64_expect("0E0", ALKT_ERR_NOT_INTEGER, 0));
    CHECK_CALL(u64_expect("-1.5", ALKT_ERR_NOT_INTEGER, 0));
    CHECK_CALL(u64_expect("-0.0", ALKT_ERR_NOT_INTEGER, 0));
    CHECK_CALL(u64_expect("1e-3", ALKT_ERR_NOT_INTEGER, 0));
    PASS();
}

TEST number_i64_values(void)
{
    CHECK_CALL(i64_expect("0", ALKT_OK, 0));
    CHECK_CALL(i64_expect("-0", ALKT_OK, 0));
    CHECK_CALL(i64_expect("1", ALKT_OK, 1));
    CHECK_CALL(i64_expect("-1", ALKT_OK, -1));
    CHECK_CALL(i64_expect("-123", ALKT_OK, -123));
    CHECK_CALL(i64_expect("4096", ALKT_OK, 4096));
    CHECK_CALL(i64_expect("9223372036854775807", ALKT_OK, INT64_MAX));
    CHECK_CALL(i64_expect("9223372036854775806", ALKT_OK, INT64_MAX - 1));
    CHECK_CALL(i64_expect("9223372036854775808", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(i64_expect("9223372036854775810", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(i64_expect("-9223372036854775807", ALKT_OK, -INT64_MAX));
    CHECK_CALL(i64_expect("-9223372036854775808", ALKT_OK, INT64_MIN));
    CHECK_CALL(i64_expect("-9223372036854775809", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(i64_expect("-9223372036854775810", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(i64_expect("18446744073709551615", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(i64_expect("18446744073709551616", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(i64_expect("-18446744073709551616", ALKT_ERR_OUT_OF_RANGE,
                          0));
    CHECK_CALL(i64_expect("99999999999999999999", ALKT_ERR_OUT_OF_RANGE, 0));
    CHECK_CALL(i64_expect("1.0", ALKT_ERR_NOT_INTEGER, 0));
    CHECK_CALL(i64_expect("-1e3", ALKT_ERR_NOT_INTEGER, 0));
    CHECK_CALL(i64_expect("2E+1", ALKT_ERR_NOT_INTEGER, 0));
    CHECK_CALL(i64_expect("-9223372036854775809.5", ALKT_ERR_NOT_INTEGER, 0));
    PASS();
}

TEST number_wrong_token(void)
{
    alkt_json_token t;
    uint64_t u = 5;
    int64_t s = 6;
    ASSERT_EQ(ALKT_OK, num_token("\"12\"", &t));
    ASSERT_EQ(ALKT_JSON_STRING, t.type);
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_u64(&t, &u));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_i64(&t, &s));
    ASSERT_EQ(ALKT_OK, num_token("true", &t));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_u64(&t, &u));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_i64(&t, &s));
    ASSERT_EQ(ALKT_OK, num_token("[1]", &t));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_u64(&t, &u));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_i64(&t, &s));
    ASSERT_EQ(ALKT_OK, num_token("42", &t));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_u64(NULL, &u));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_i64(NULL, &s));
    ASSERT_EQ((uint64_t)5, u);
    ASSERT_EQ((int64_t)6, s);
    t.ptr = NULL;
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_u64(&t, &u));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_i64(&t, &s));
    ASSERT_EQ(ALKT_OK, num_token("42", &t));
    ASSERT_EQ(ALKT_OK, alkt_json_number_u64(&t, &u));
    ASSERT_EQ(ALKT_OK, alkt_json_number_i64(&t, &s));
    ASSERT_EQ((uint64_t)42, u);
    ASSERT_EQ((int64_t)42, s);
    PASS();
}

/* Numbers inside a document: the token covers the number only. */
TEST number_in_document(void)
{
    const char *doc = "[18446744073709551615,-9223372036854775808,7]";
    alkt_json_parser p;
    alkt_json_token t;
    uint64_t u = 0;
    int64_t s = 0;
    ASSERT_EQ(ALKT_OK, alkt_json_init(&p, doc, strlen(doc), NULL));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_OK, alkt_json_number_u64(&t, &u));
    ASSERT_EQ(UINT64_MAX, u);
    ASSERT_EQ(ALKT_ERR_OUT_OF_RANGE, alkt_json_number_i64(&t, &s));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_OK, alkt_json_number_i64(&t, &s));
    ASSERT_EQ(INT64_MIN, s);
    ASSERT_EQ(ALKT_ERR_OUT_OF_RANGE, alkt_json_number_u64(&t, &u));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_OK, alkt_json_number_u64(&t, &u));
    ASSERT_EQ((uint64_t)7, u);
    ASSERT_EQ(ALKT_OK, alkt_json_number_i64(&t, &s));
    ASSERT_EQ((int64_t)7, s);
    PASS();
}

/* ---- alkt_ip_parse ---------------------------------------------------- */

static enum greatest_test_res ip_good(const char *s, unsigned family,
                                      const unsigned char *want)
{
    alkt_ip ip;
    unsigned char zero[16];
    memset(&ip, 0xA5, sizeof ip);
    memset(zero, 0, sizeof zero);
    ASSERT_EQm(s, ALKT_OK, alkt_ip_parse(s, strlen(s), &ip));
    ASSERT_EQm(s, family, (unsigned)ip.family);
    ASSERT_MEM_EQm(s, want, ip.bytes, family == 4 ? 4 : 16);
    if (family == 4)
        ASSERT_MEM_EQm(s, zero, ip.bytes + 4, 12);
    PASS();
}

static enum greatest_test_res ip_bad_len(const char *s, size_t len)
{
    alkt_ip ip, same;
    memset(&ip, 0xA5, sizeof ip);
    memset(&same, 0xA5, sizeof same);
    ASSERT_EQm(s, ALKT_ERR_BAD_ADDRESS, alkt_ip_parse(s, len, &ip));
    ASSERT_MEM_EQm(s, &same, &ip, sizeof ip); /* untouched */
    PASS();
}

static enum greatest_test_res ip_bad(const char *s)
{
    CHECK_CALL(ip_bad_len(s, strlen(s)));
    PASS();
}

TEST ip_parse_v4_good(void)
{
    static const unsigned char a[4] = {1, 2, 3, 4};
    static const unsigned char z[4] = {0, 0, 0, 0};
    static const unsigned char f[4] = {255, 255, 255, 255};
    static const unsigned char b[4] = {100, 200, 250, 199};
    static const unsigned char c[4] = {10, 0, 99, 249};
    CHECK_CALL(ip_good("1.2.3.4", 4, a));
    CHECK_CALL(ip_good("0.0.0.0", 4, z));
    CHECK_CALL(ip_good("255.255.255.255", 4, f));
    CHECK_CALL(ip_good("100.200.250.199", 4, b));
    CHECK_CALL(ip_good("10.0.99.249", 4, c));
    PASS();
}

TEST ip_parse_v4_bad(void)
{
    static const char *const bad[] = {
        "", "1", "1.2.3", "1.2.3.4.5", "1..2.3", ".1.2.3", "1.2.3.",
        "1.2.3.4.", "01.2.3.4", "1.02.3.4", "1.2.003.4", "1.2.3.04",
        "1.2.3.00", "00.0.0.0", "256.1.1.1", "1.2.3.256", "1.300.3.4",
        "999.1.1.1", "1000.1.1.1", "1.2.3.1000", "0001.1.1.1", "1.2.3.-1",
        "-1.2.3.4", "+1.2.3.4", "a.b.c.d", "1.2.3.4 ", " 1.2.3.4", "1.2.3.4a",
        "1.2.3.a", "1,2,3,4", "1.2.3.4/8", "0x1.2.3.4", "1.2..3.4", "...",
        "1.2.3.4.", "1e1.2.3.4", "1/2.3.4", "1:2.3.4"};
    size_t k;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++)
        CHECK_CALL(ip_bad(bad[k]));
    CHECK_CALL(ip_bad_len("1.2.3.4\0", 8));
    CHECK_CALL(ip_bad_len("1.2.3.4", 6)); /* "1.2.3." */
    PASS();
}

static void ip6_fill(unsigned char *b, const unsigned *g)
{
    size_t k;
    for (k = 0; k < 8; k++) {
        b[2 * k] = (unsigned char)(g[k] >> 8);
        b[2 * k + 1] = (unsigned char)(g[k] & 0xFF);
    }
}

static enum greatest_test_res ip6_good(const char *s, unsigned g0,
                                       unsigned g1, unsigned g2, unsigned g3,
                                       unsigned g4, unsigned g5, unsigned g6,
                                       unsigned g7)
{
    unsigned g[8];
    unsigned char b[16];
    g[0] = g0; g[1] = g1; g[2] = g2; g[3] = g3;
    g[4] = g4; g[5] = g5; g[6] = g6; g[7] = g7;
    ip6_fill(b, g);
    CHECK_CALL(ip_good(s, 6, b));
    PASS();
}

TEST ip_parse_v6_good(void)
{
    CHECK_CALL(ip6_good("::", 0, 0, 0, 0, 0, 0, 0, 0));
    CHECK_CALL(ip6_good("::1", 0, 0, 0, 0, 0, 0, 0, 1));
    CHECK_CALL(ip6_good("1::", 1, 0, 0, 0, 0, 0, 0, 0));
    CHECK_CALL(ip6_good("1::8", 1, 0, 0, 0, 0, 0, 0, 8));
    CHECK_CALL(ip6_good("1:2:3:4:5:6:7::", 1, 2, 3, 4, 5, 6, 7, 0));
    CHECK_CALL(ip6_good("::1:2:3:4:5:6:7", 0, 1, 2, 3, 4, 5, 6, 7));
    CHECK_CALL(ip6_good("1:2:3::5:6:7:8", 1, 2, 3, 0, 5, 6, 7, 8));
    CHECK_CALL(ip6_good("1:2::7:8", 1, 2, 0, 0, 0, 0, 7, 8));
    CHECK_CALL(ip6_good("1:2:3:4:5:6:7:8", 1, 2, 3, 4, 5, 6, 7, 8));
    CHECK_CALL(ip6_good("0:0:0:0:0:0:0:0", 0, 0, 0, 0, 0, 0, 0, 0));
    CHECK_CALL(ip6_good("::0:0:0:0:0:0:0", 0, 0, 0, 0, 0, 0, 0, 0));
    CHECK_CALL(ip6_good("2001:db8::ff00:42:8329", 0x2001, 0xdb8, 0, 0, 0,
                        0xff00, 0x42, 0x8329));
    CHECK_CALL(ip6_good("2001:0DB8:0000:0000:0000:FF00:0042:8329", 0x2001,
                        0xdb8, 0, 0, 0, 0xff00, 0x42, 0x8329));
    CHECK_CALL(ip6_good("ABCD:EF01:abcd:ef01:9876:5432:10fF:Ffff", 0xabcd,
                        0xef01, 0xabcd, 0xef01, 0x9876, 0x5432, 0x10ff,
                        0xffff));
    CHECK_CALL(ip6_good("fe80::1", 0xfe80, 0, 0, 0, 0, 0, 0, 1));
    CHECK_CALL(ip6_good("::ffff:1.2.3.4", 0, 0, 0, 0, 0, 0xffff, 0x0102,
                        0x0304));
    CHECK_CALL(ip6_good("::1.2.3.4", 0, 0, 0, 0, 0, 0, 0x0102, 0x0304));
    CHECK_CALL(ip6_good("1:2:3:4:5:6:1.2.3.4", 1, 2, 3, 4, 5, 6, 0x0102,
                        0x0304));
    CHECK_CALL(ip6_good("1::6:255.254.253.0", 1, 0, 0, 0, 0, 6, 0xfffe,
                        0xfd00));
    CHECK_CALL(ip6_good("1:2:3:4:5::0.0.0.0", 1, 2, 3, 4, 5, 0, 0, 0));
    /* 45 characters: the longest text form */
    CHECK_CALL(ip6_good("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
                        0xffff, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff,
                        0xffff, 0xffff));
    CHECK_CALL(ip6_good("0000:0000:0000:0000:0000:0000:0000:0001", 0, 0, 0,
                        0, 0, 0, 0, 1));
    PASS();
}

TEST ip_parse_v6_bad(void)
{
    static const char *const bad[] = {
        ":", "1:", ":1", ":::", "::::", "1:::2", "1::2::3", "::1::",
        "1:2:3:4:5:6:7:", "1:2:3:4:5:6:7:8:", ":1:2:3:4:5:6:7",
        ":1:2:3:4:5:6:7:8", "1:2:3:4:5:6:7", "1:2", "1:2:3:4:5:6:7:8:9",
        "1:2:3:4:5:6:7:8::", "::1:2:3:4:5:6:7:8", "1:2:3:4::5:6:7:8",
        "1::2:", "12345::", "::12345", "00000::1", "1:2:3:4:5:6:7:g",
        "1:2:3:4:5:6:7:8g", "g::", "::g", "1: :2", " ::1", "::1 ",
        "fe80::1%eth0", "fe80::1%1", "[::1]", "::1/128", "1.2.3.4::",
        "::1.2.3", "::1.2.3.4.5", "::256.1.1.1", "::1.2.3.04", "::1.2.3.4:5",
        "::a.2.3.4", "::12345.1.1.1", "1:2:3:4:5:6:7:1.2.3.4",
        "1:2:3:4:5:6:7:8:1.2.3.4", "::1:2:3:4:5:6:1.2.3.4",
        "1:2:3:4:5:1.2.3.4", "1.2.3.4:1::", "::ffff:1.2.3.4.",
        "1111:2222:3333:4444:5555:6666:7777:8888:9999",
        "0000:0000:0000:0000:0000:0000:0000:0000:0000", "::-1", "-1::",
        "0x1::", "1:2:3:4:5:6:7:-8"};
    size_t k;
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++)
        CHECK_CALL(ip_bad(bad[k]));
    CHECK_CALL(ip_bad_len("::1\0", 4));
    CHECK_CALL(ip_bad_len("::", 1));
    /* 46 and more characters, whatever they are */
    CHECK_CALL(ip_bad("0000:0000:0000:0000:0000:0000:0000:0000:0000:0000"));
    CHECK_CALL(ip_bad("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.2555"));
    PASS();
}

TEST ip_parse_args(void)
{
    alkt_ip ip;
    ASSERT_EQ(ALKT_ERR_ARG, alkt_ip_parse(NULL, 0, &ip));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_ip_parse(NULL, 3, &ip));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_ip_parse("::1", 3, NULL));
    ASSERT_EQ(ALKT_ERR_BAD_ADDRESS, alkt_ip_parse("::1", 0, &ip));
    /* a v6 parse after a v4 one leaves no stale bytes */
    ASSERT_EQ(ALKT_OK, alkt_ip_parse("9.9.9.9", 7, &ip));
    ASSERT_EQ(ALKT_OK, alkt_ip_parse("::", 2, &ip));
    ASSERT_EQ(6u, (unsigned)ip.family);
    ASSERT_EQ(0u, (unsigned)(ip.bytes[0] | ip.bytes[3] | ip.bytes[15]));
    PASS();
}

/* ---- alkt_ip_format --------------------------------------------------- */

static enum greatest_test_res fmt_expect(const char *in, const char *want)
{
    alkt_ip ip, back;
    char *out = (char *)malloc(ALKT_IP_TEXT_MAX); /* exact size for ASan */
    size_t n;
    ASSERT(out != NULL);
    if (alkt_ip_parse(in, strlen(in), &ip) != ALKT_OK) {
        free(out);
        FAILm(in);
    }
    memset(out, 'Z', ALKT_IP_TEXT_MAX);
    n = alkt_ip_format(&ip, out);
    if (n != strlen(want) || strcmp(out, want) != 0) {
        fprintf(stdout, "\n  format(%s): want \"%s\", got \"%.46s\" (%lu)\n",
                in, want, out, (unsigned long)n);
        free(out);
        FAILm("format");
    }
    /* the canonical form parses back to the same address */
    if (alkt_ip_parse(out, n, &back) != ALKT_OK ||
        memcmp(&back, &ip, sizeof ip) != 0) {
        free(out);
        FAILm("format does not round-trip");
    }
    free(out);
    PASS();
}

TEST ip_format_v4(void)
{
    CHECK_CALL(fmt_expect("1.2.3.4", "1.2.3.4"));
    CHECK_CALL(fmt_expect("0.0.0.0", "0.0.0.0"));
    CHECK_CALL(fmt_expect("255.255.255.255", "255.255.255.255"));
    CHECK_CALL(fmt_expect("10.100.0.9", "10.100.0.9"));
    CHECK_CALL(fmt_expect("192.168.1.10", "192.168.1.10"));
    PASS();
}

TEST ip_format_v6_rfc5952(void)
{
    CHECK_CALL(fmt_expect("::", "::"));
    CHECK_CALL(fmt_expect("0:0:0:0:0:0:0:1", "::1"));
    CHECK_CALL(fmt_expect("1:0:0:0:0:0:0:0", "1::"));
    CHECK_CALL(fmt_expect("2001:0db8:0:0:0:0:0:1", "2001:db8::1"));
    /* a single zero group is not compressed */
    CHECK_CALL(fmt_expect("2001:db8:0:1:1:1:1:1", "2001:db8:0:1:1:1:1:1"));
    CHECK_CALL(fmt_expect("0:1:2:3:4:5:6:7", "0:1:2:3:4:5:6:7"));
    CHECK_CALL(fmt_expect("1:2:3:4:5:6:7:0", "1:2:3:4:5:6:7:0"));
    CHECK_CALL(fmt_expect("1:0:2:0:3:0:4:0", "1:0:2:0:3:0:4:0"));
    /* the longest run */
    CHECK_CALL(fmt_expect("2001:0:0:1:0:0:0:1", "2001:0:0:1::1"));
    CHECK_CALL(fmt_expect("0:0:1:0:0:0:1:0", "0:0:1::1:0"));
    CHECK_CALL(fmt_expect("0:0:0:1:0:0:0:0", "0:0:0:1::"));
    CHECK_CALL(fmt_expect("1:0:0:2:0:0:0:3", "1:0:0:2::3"));
    /* first on a tie */
    CHECK_CALL(fmt_expect("2001:db8:0:0:1:0:0:1", "2001:db8::1:0:0:1"));
    CHECK_CALL(fmt_expect("0:0:1:2:3:4:0:0", "::1:2:3:4:0:0"));
    CHECK_CALL(fmt_expect("1:0:0:0:1:0:0:0", "1::1:0:0:0"));
    /* leading and trailing runs */
    CHECK_CALL(fmt_expect("0:0:1:2:3:4:5:6", "::1:2:3:4:5:6"));
    CHECK_CALL(fmt_expect("1:2:3:4:5:6:0:0", "1:2:3:4:5:6::"));
    CHECK_CALL(fmt_expect("0:0:0:0:1:0:0:0", "::1:0:0:0"));
    CHECK_CALL(fmt_expect("0:0:0:0:0:0:0:7", "::7"));
    CHECK_CALL(fmt_expect("1:2:0:0:0:0:3:4", "1:2::3:4"));
    CHECK_CALL(fmt_expect("1:2:3::5:6:7:8", "1:2:3:0:5:6:7:8"));
    /* lowercase, no leading zeros */
    CHECK_CALL(fmt_expect("ABCD:EF01::", "abcd:ef01::"));
    CHECK_CALL(fmt_expect("000f:00ff:0fff:ffff:0001:0010:0100:1000",
                          "f:ff:fff:ffff:1:10:100:1000"));
    CHECK_CALL(fmt_expect("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
                          "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"));
    CHECK_CALL(fmt_expect("FE80::A:b:C:d", "fe80::a:b:c:d"));
    /* IPv4-mapped is dotted; other embedded forms are not */
    CHECK_CALL(fmt_expect("::ffff:1.2.3.4", "::ffff:1.2.3.4"));
    CHECK_CALL(fmt_expect("::FFFF:102:304", "::ffff:1.2.3.4"));
    CHECK_CALL(fmt_expect("::ffff:0.0.0.0", "::ffff:0.0.0.0"));
    CHECK_CALL(fmt_expect("::ffff:255.255.255.255",
                          "::ffff:255.255.255.255"));
    CHECK_CALL(fmt_expect("::1.2.3.4", "::102:304"));
    CHECK_CALL(fmt_expect("::fffe:1.2.3.4", "::fffe:102:304"));
    CHECK_CALL(fmt_expect("1::ffff:1.2.3.4", "1::ffff:102:304"));
    CHECK_CALL(fmt_expect("0:0:0:0:1:ffff:1.2.3.4", "::1:ffff:102:304"));
    CHECK_CALL(fmt_expect("ff:0:0:0:0:ffff:1.2.3.4", "ff::ffff:102:304"));
    PASS();
}

TEST ip_format_odd_family(void)
{
    alkt_ip ip;
    char out[ALKT_IP_TEXT_MAX];
    memset(&ip, 0, sizeof ip);
    memset(out, 'Z', sizeof out);
    ASSERT_EQ((size_t)0, alkt_ip_format(&ip, out));
    ASSERT_EQ('\0', out[0]);
    ip.family = 5;
    memset(out, 'Z', sizeof out);
    ASSERT_EQ((size_t)0, alkt_ip_format(&ip, out));
    ASSERT_EQ('\0', out[0]);
    ASSERT_EQ((size_t)0, alkt_ip_format(NULL, out));
    ip.family = 4;
    ASSERT_EQ((size_t)0, alkt_ip_format(&ip, NULL));
    /* IPv4 ignores bytes 4..15 */
    memset(ip.bytes, 0xFF, sizeof ip.bytes);
    ip.bytes[0] = 7;
    ASSERT_EQ((size_t)13, alkt_ip_format(&ip, out));
    ASSERT_STR_EQ("7.255.255.255", out);
    PASS();
}

/* parse(format(x)) == x for a spread of byte patterns. */
TEST ip_format_roundtrip(void)
{
    unsigned seed = 12345u;
    size_t k, j;
    for (k = 0; k < 3000; k++) {
        alkt_ip ip, back;
        char out[ALKT_IP_TEXT_MAX];
        size_t n;
        memset(&ip, 0, sizeof ip);
        ip.family = (unsigned char)(k % 5 == 0 ? 4 : 6);
        for (j = 0; j < (ip.family == 4 ? 4u : 16u); j++) {
            seed = seed * 1103515245u + 12345u;
            /* mostly zero groups, so that runs of every length occur */
            if (ip.family == 6 && ((seed >> 16) & 3u) != 0)
                ip.bytes[j] = 0;
            else
                ip.bytes[j] = (unsigned char)(seed >> 20);
        }
        if (k % 7 == 1 && ip.family == 6) {
            memset(ip.bytes, 0, 10);
            ip.bytes[10] = ip.bytes[11] = 0xFF;
        }
        n = alkt_ip_format(&ip, out);
        ASSERT_EQ(strlen(out), n);
        ASSERT(n < ALKT_IP_TEXT_MAX);
        ASSERT_EQ(ALKT_OK, alkt_ip_parse(out, n, &back));
        ASSERT_MEM_EQm(out, &ip, &back, sizeof ip);
        ASSERT(strstr(out, ":::") == NULL);
        for (j = 0; j < n; j++)
            ASSERT(out[j] < 'A' || out[j] > 'Z');
    }
    PASS();
}

/* ---- alkt_hostname_valid ---------------------------------------------- */

static char *host_of(const size_t *labels, size_t count)
{
    size_t k, j, o = 0, total = 0;
    char *b;
    for (k = 0; k < count; k++)
        total += labels[k] + 1;
    b = (char *)malloc(total + 1);
    if (!b)
        return NULL;
    for (k = 0; k < count; k++) {
        if (k)
            b[o++] = '.';
        for (j = 0; j < labels[k]; j++)
            b[o++] = (char)('a' + (j + k) % 26);
    }
    b[o] = '\0';
    return b;
}

static enum greatest_test_res host_len_case(const size_t *labels,
                                            size_t count, size_t total,
                                            int want)
{
    char *h = host_of(labels, count);
    int got;
    ASSERT(h != NULL);
    got = alkt_hostname_valid(h, strlen(h));
    if (strlen(h) != total || got != want) {
        fprintf(stdout, "\n  host of %lu bytes: want %d got %d\n",
                (unsigned long)strlen(h), want, got);
        free(h);
        FAILm("hostname length case");
    }
    free(h);
    PASS();
}

TEST hostname_lengths(void)
{
    static const size_t l253[] = {63, 63, 63, 61};
    static const size_t l254[] = {63, 63, 63, 62};
    static const size_t l63[] = {63};
    static const size_t l64[] = {64};
    static const size_t l63b[] = {1, 63, 2};
    static const size_t l64b[] = {1, 64, 2};
    static const size_t l64top[] = {3, 64};
    static const size_t many[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_CALL(host_len_case(l253, 4, 253, 1));
    CHECK_CALL(host_len_case(l254, 4, 254, 0));
    CHECK_CALL(host_len_case(l63, 1, 63, 1));
    CHECK_CALL(host_len_case(l64, 1, 64, 0));
    CHECK_CALL(host_len_case(l63b, 3, 68, 1));
    CHECK_CALL(host_len_case(l64b, 3, 69, 0));
    CHECK_CALL(host_len_case(l64top, 2, 68, 0));
    CHECK_CALL(host_len_case(many, 12, 23, 1));
    PASS();
}

TEST hostname_labels(void)
{
    static const char *const good[] = {
        "a", "z", "A", "Z", "localhost", "example.com", "A.COM", "1.a",
        "1a", "a1", "0-9", "a.1-2", "a-b.c", "a--b", "xn--bcher-kva.example",
        "123.456.com", "a.b.c.d.e.f", "9a", "a.b9", "x-1.y-2.z"};
    static const char *const bad[] = {
        "", "1", "123", "a.1", "1.2.3.4", "a.b.9", "-a", "a-", "-a.b",
        "a-.b", "a.-b", "a.b-", "a..b", ".a", "a.", "a.b.", ".", "..",
        "a_b", "_a.b", "a b", "a/b", "a:b", "a@b", "a[b", "a`b", "a{b",
        "a\x7f" "b", "caf\xC3\xA9", "a.b:80", "[::1]", "a*", "a.12-",
        "-", "-.a", "a.-"};
    size_t k;
    for (k = 0; k < sizeof good / sizeof good[0]; k++)
        ASSERT_EQm(good[k], 1, alkt_hostname_valid(good[k], strlen(good[k])));
    for (k = 0; k < sizeof bad / sizeof bad[0]; k++)
        ASSERT_EQm(bad[k], 0, alkt_hostname_valid(bad[k], strlen(bad[k])));
    ASSERT_EQ(0, alkt_hostname_valid("a\0b", 3));
    ASSERT_EQ(0, alkt_hostname_valid(NULL, 3));
    ASSERT_EQ(0, alkt_hostname_valid(NULL, 0));
    ASSERT_EQ(1, alkt_hostname_valid("ab.cd", 2)); /* only len bytes */
    ASSERT_EQ(0, alkt_hostname_valid("ab.cd", 3));
    ASSERT_EQ(0, alkt_hostname_valid("ab.12x", 5));
    PASS();
}

/* Every byte value as a one-byte and as an inner character. */
TEST hostname_charset(void)
{
    unsigned c;
    for (c = 0; c < 256; c++) {
        char one[1], mid[3];
        int letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
        int digit = c >= '0' && c <= '9';
        one[0] = (char)c;
        mid[0] = 'x';
        mid[1] = (char)c;
        mid[2] = 'y';
        ASSERT_EQ(letter ? 1 : 0, alkt_hostname_valid(one, 1));
        ASSERT_EQ(letter || digit || c == '-' || c == '.' ? 1 : 0,
                  alkt_hostname_valid(mid, 3));
    }
    PASS();
}

/* ---- alkt_strerror ---------------------------------------------------- */

TEST strerror_all_codes(void)
{
    static const int codes[] = {
#define ALKT_T_CODE(name, value, text) name,
        ALKT_RESULT_LIST(ALKT_T_CODE)
#undef ALKT_T_CODE
    };
    static const char *const texts[] = {
#define ALKT_T_TEXT(name, value, text) text,
        ALKT_RESULT_LIST(ALKT_T_TEXT)
#undef ALKT_T_TEXT
    };
    static const int values[] = {
#define ALKT_T_VALUE(name, value, text) value,
        ALKT_RESULT_LIST(ALKT_T_VALUE)
#undef ALKT_T_VALUE
    };
    const char *unknown = alkt_strerror(1);
    size_t n = sizeof codes / sizeof codes[0], k, j;
    ASSERT_EQ((size_t)57, n);   /* 31 for the params, 18 for the session, 2 roles,
                                   3 for encryption, 3 for who may connect */
    ASSERT(unknown != NULL);
    ASSERT_STR_EQ("unknown alktunnel result code", unknown);
    for (k = 0; k < n; k++) {
        const char *s = alkt_strerror(codes[k]);
        ASSERT_EQ(values[k], codes[k]);
        ASSERT_EQ(-(int)k, codes[k]); /* 0, -1, ... -56 with no gaps */
        ASSERT(s != NULL);
        ASSERT(s[0] != '\0');
        ASSERT_STR_EQm(texts[k], texts[k], s);
        ASSERT(strcmp(s, unknown) != 0);
        for (j = 0; j < k; j++)
            ASSERT(strcmp(s, alkt_strerror(codes[j])) != 0);
    }
    ASSERT_STR_EQ("ok", alkt_strerror(ALKT_OK));
    ASSERT_STR_EQ("invalid UTF-8", alkt_strerror(ALKT_ERR_BAD_UTF8));
    ASSERT_STR_EQ("output buffer too small",
                  alkt_strerror(ALKT_ERR_BUFFER_TOO_SMALL));
    ASSERT_STR_EQ(unknown, alkt_strerror(-57));
    ASSERT_STR_EQ(unknown, alkt_strerror(2));
    ASSERT_STR_EQ(unknown, alkt_strerror(-1000));
    ASSERT_STR_EQ(unknown, alkt_strerror(-32767));
    ASSERT_STR_EQ(unknown, alkt_strerror(32767));
    PASS();
}

/* A NULL value pointer is an argument error like a NULL token (the
 * shared helper checks it, but u64/i64 pass it their own local). Kept in
 * its own test, run last: a wrong implementation crashes here. */
TEST number_null_value(void)
{
    alkt_json_token t;
    ASSERT_EQ(ALKT_OK, num_token("42", &t));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_u64(&t, NULL));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_i64(&t, NULL));
    PASS();
}

/* ---- suites ----------------------------------------------------------- */

/* ---- walking ------------------------------------------------------------- */

/* The first NUMBER token of json as a double, or the code. */
static int first_double(const char *json, double *v)
{
    alkt_json_parser p;
    alkt_json_token t;
    alkt_json_init(&p, json, strlen(json), NULL);
    do {
        if (alkt_json_next(&p, &t) != ALKT_OK)
            return -100;
    } while (t.type != ALKT_JSON_NUMBER && t.type != ALKT_JSON_END);
    return alkt_json_number_double(&t, v);
}

TEST json_number_double_is_strtod_bit_for_bit(void)
{
    static const char *const nums[] = {
        "0", "-0", "1", "-1", "0.1", "0.3", "1e22", "1e23", "9007199254740993",
        "123456789012345", "1234567890123456", "2.2250738585072011e-308",
        "2.2250738585072014e-308", "4.9e-324", "2.4e-324", "2.5e-324",
        "1.7976931348623157e308", "0.000001", "1e-22", "1e-23", "3.14159",
        "-65.613616999999977", "100e-2", "0.00000000000000000000000000001e29",
        "123.456e3", "1E+2", "5e-325"};
    uint64_t rng = test_seed * 0x9e3779b97f4a7c15u + 11;
    char text[64];
    size_t k;
    double got, want;
    for (k = 0; k < sizeof nums / sizeof nums[0]; k++) {
        want = strtod(nums[k], NULL);
        ASSERT_EQ_FMT(ALKT_OK, first_double(nums[k], &got), "%d");
        ASSERTm(nums[k], memcmp(&got, &want, sizeof got) == 0);
    }
    /* drawn: up to 20 digits, a point anywhere, exponents -340..340 */
    for (k = 0; k < 20000; k++) {
        uint64_t r = alksim_splitmix64(&rng);
        size_t nd = 1 + (size_t)(r % 20), d, o = 0, point = (size_t)((r >> 8) % (nd + 1));
        if ((r >> 16) & 1)
            text[o++] = '-';
        for (d = 0; d < nd; d++) {
            if (d == point && d > 0)
                text[o++] = '.';
            text[o++] = (char)('0' + (d == 0 && nd > 1 && point != 1 ? 1 + (r >> (20 + d)) % 9
                                                    : (alksim_splitmix64(&rng) % 10)));
        }
        if ((r >> 40) & 1)
            o += (size_t)sprintf(text + o, "e%d", (int)((r >> 41) % 681) - 340);
        text[o] = '\0';
        if (alkt_json_validate(text, o, NULL, NULL) != ALKT_OK)
            continue; /* "01..." and the like */
        want = strtod(text, NULL);
        if (want > DBL_MAX || want < -DBL_MAX) {
            ASSERT_EQ(ALKT_ERR_OUT_OF_RANGE, first_double(text, &got));
            continue;
        }
        ASSERT_EQ(ALKT_OK, first_double(text, &got));
        ASSERTm(text, memcmp(&got, &want, sizeof got) == 0);
    }
    ASSERT_EQ(ALKT_ERR_OUT_OF_RANGE, first_double("1e309", &got));
    ASSERT_EQ(ALKT_ERR_OUT_OF_RANGE, first_double("-1e400", &got));
    ASSERT_EQ(ALKT_OK, first_double("-1e-400", &got));
    ASSERT(got == 0 && signbit(got));
    ASSERT_EQ(ALKT_OK, first_double("-0.0", &got));
    ASSERT(got == 0 && signbit(got));
    PASS();
}

TEST json_number_double_limits_and_types(void)
{
    static char big[ALKT_JSON_NUMBER_TEXT_MAX + 8];
    alkt_json_parser p;
    alkt_json_token t;
    double v = 7;
    /* "1.000...0": one past the limit refused, at the limit converted */
    memset(big, '0', sizeof big - 1);
    big[0] = '1';
    big[1] = '.';
    big[ALKT_JSON_NUMBER_TEXT_MAX + 1] = '\0';
    ASSERT_EQ(ALKT_ERR_TOO_LARGE, first_double(big, &v));
    big[ALKT_JSON_NUMBER_TEXT_MAX] = '\0';
    ASSERT_EQ(ALKT_OK, first_double(big, &v));
    ASSERT(v == 1.0);
    alkt_json_init(&p, "\"1\"", 3, NULL);
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_ERR_WRONG_TYPE, alkt_json_number_double(&t, &v));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_double(NULL, &v));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_number_double(&t, NULL));
    PASS();
}

TEST json_string_equal_decodes_escapes(void)
{
    static const char doc[] =
        "[\"plain\", \"a\\u0062c\", \"\\ud83d\\ude00!\", \"tab\\there\", \"\\\"\", \"\"]";
    alkt_json_parser p;
    alkt_json_token t[6];
    size_t k;
    alkt_json_init(&p, doc, sizeof doc - 1, NULL);
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t[0])); /* [ */
    for (k = 0; k < 6; k++)
        ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t[k]));
    ASSERT(alkt_json_string_equal(&t[0], "plain", 5));
    ASSERT(!alkt_json_string_equal(&t[0], "plai", 4));
    ASSERT(!alkt_json_string_equal(&t[0], "plainx", 6));
    ASSERT(alkt_json_string_equal(&t[1], "abc", 3));
    ASSERT(!alkt_json_string_equal(&t[1], "a\\u0062c", 8));
    ASSERT(alkt_json_string_equal(&t[2], "\xf0\x9f\x98\x80!", 5));
    ASSERT(!alkt_json_string_equal(&t[2], "\xf0\x9f\x98\x80", 4));
    ASSERT(alkt_json_string_equal(&t[3], "tab\there", 8));
    ASSERT(alkt_json_string_equal(&t[4], "\"", 1));
    ASSERT(alkt_json_string_equal(&t[5], "", 0));
    ASSERT(!alkt_json_string_equal(&t[5], "x", 1));
    PASS();
}

TEST json_skip_and_find_key(void)
{
    static const char doc[] =
        "{\"a\": [1, {\"a\": 2}, [3]], \"b\\u0063\": {\"x\": {}}, \"c\": 4, "
        "\"bc\": 5}";
    alkt_json_parser p;
    alkt_json_token t, k;
    /* the second "bc" (plain) is not found: the first (escaped) is */
    alkt_json_init(&p, doc, sizeof doc - 1, NULL);
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_OK, alkt_json_find_key(&p, "bc", 2, &k));
    ASSERT_EQ((size_t)26, k.offset);
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_JSON_OBJECT, t.type);
    ASSERT_EQ(ALKT_OK, alkt_json_skip(&p, &t)); /* {"x": {}} */
    ASSERT_EQ(ALKT_OK, alkt_json_find_key(&p, "bc", 2, &k));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_JSON_NUMBER, t.type);
    ASSERT_EQ('5', t.ptr[0]);
    ASSERT_EQ(ALKT_ERR_MISSING_FIELD, alkt_json_find_key(&p, "a", 1, &k));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_JSON_END, t.type);
    /* a key's value skipped with it; a scalar needs nothing */
    alkt_json_init(&p, doc, sizeof doc - 1, NULL);
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t)); /* "a" */
    ASSERT_EQ(ALKT_OK, alkt_json_skip(&p, &t));
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_JSON_KEY, t.type);
    ASSERT(alkt_json_string_equal(&t, "bc", 2));
    ASSERT_EQ(ALKT_OK, alkt_json_skip(&p, &t)); /* its value */
    ASSERT_EQ(ALKT_OK, alkt_json_find_key(&p, "c", 1, &k));
    /* at a value, not between members: refused */
    ASSERT_EQ(ALKT_ERR_STATE, alkt_json_find_key(&p, "c", 1, &k));
    /* errors come through; argument checks */
    alkt_json_init(&p, "{\"a\": [1, }", 11, NULL);
    ASSERT_EQ(ALKT_OK, alkt_json_next(&p, &t));
    ASSERT_EQ(ALKT_ERR_SYNTAX, alkt_json_find_key(&p, "z", 1, &k));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_find_key(NULL, "z", 1, &k));
    ASSERT_EQ(ALKT_ERR_ARG, alkt_json_skip(&p, NULL));
    PASS();
}

SUITE(alkt_reader_suite)
{
    RUN_TEST(json_init_null_parser);
    RUN_TEST(json_init_null_json_with_len);
    RUN_TEST(json_init_null_json_empty);
    RUN_TEST(json_init_depth_limit_arg);
    RUN_TEST(json_next_error_null_args);
    RUN_TEST(json_error_clean_state);
    RUN_TEST(json_tokens_every_type);
    RUN_TEST(json_tokens_whitespace);
    RUN_TEST(json_tokens_scalars);
    RUN_TEST(json_sticky_error);
    RUN_TEST(json_line_column);
    RUN_TEST(json_errors_structure);
    RUN_TEST(json_errors_numbers);
    RUN_TEST(json_errors_literals);
    RUN_TEST(json_errors_strings);
    RUN_TEST(json_string_stop_positions);
    RUN_TEST(json_size_limit_custom);
    RUN_TEST(json_number_double_is_strtod_bit_for_bit);
    RUN_TEST(json_number_double_limits_and_types);
    RUN_TEST(json_string_equal_decodes_escapes);
    RUN_TEST(json_skip_and_find_key);
    RUN_TEST(json_size_limit_default);
    RUN_TEST(json_depth_default);
    RUN_TEST(json_depth_custom);
    RUN_TEST(json_depth_mixed_kinds);
    RUN_TEST(unescape_simple_escapes);
    RUN_TEST(unescape_unicode_boundaries);
    RUN_TEST(unescape_cap_boundaries);
    RUN_TEST(unescape_null_args);
    RUN_TEST(unescape_bad_surrogates);
    RUN_TEST(unescape_bad_escapes);
    RUN_TEST(unescape_hex_digits);
    RUN_TEST(unescape_reader_tokens);
    RUN_TEST(number_u64_values);
    RUN_TEST(number_i64_values);
    RUN_TEST(number_wrong_token);
    RUN_TEST(number_in_document);
}

SUITE(alkt_address_suite)
{
    RUN_TEST(ip_parse_v4_good);
    RUN_TEST(ip_parse_v4_bad);
    RUN_TEST(ip_parse_v6_good);
    RUN_TEST(ip_parse_v6_bad);
    RUN_TEST(ip_parse_args);
    RUN_TEST(ip_format_v4);
    RUN_TEST(ip_format_v6_rfc5952);
    RUN_TEST(ip_format_odd_family);
    RUN_TEST(ip_format_roundtrip);
    RUN_TEST(hostname_lengths);
    RUN_TEST(hostname_labels);
    RUN_TEST(hostname_charset);
    RUN_TEST(strerror_all_codes);
    RUN_TEST(number_null_value);
}
