/* test_alktunnel_sealed.h - the encrypted session (the default): the
 * handshake and first records frozen in hex (computed apart, see the top
 * of test_alktunnel_session.h), no channel byte readable on the wire, a
 * record changed / replayed / reordered / cut, rekeying at the counter
 * limit, fresh keys on resume, encrypted and plaintext peers refusing each
 * other, and the tag compared in full whatever its first byte. Uses the
 * t_pair helpers of test_alktunnel_session.h. */

/* Everything side k has to send, into buf (not delivered). */
static size_t s_capture(t_pair *p, int k, unsigned char *buf, size_t cap)
{
    size_t n, total = 0;
    while (total < cap &&
           (n = alkt_session_poll_transmit(&p->s[k], buf + total, cap - total)) > 0)
        total += n;
    return total;
}

/* The records in w[0..n): their starts (and n itself after the last whole
 * one); the count of whole records. */
static size_t s_records(const unsigned char *w, size_t n, size_t *at, size_t max)
{
    size_t off = 0, k = 0;
    while (off + 2 <= n && k < max) {
        size_t len = 2 + ((size_t)w[off] << 8 | w[off + 1]) + 16;
        if (off + len > n) break;
        at[k++] = off;
        off += len;
    }
    if (k < max) at[k] = off;
    return k;
}

/* 1 when some len-byte run of pat appears in hay. */
static int s_leaks(const unsigned char *hay, size_t hn, const unsigned char *pat,
                   size_t pn, size_t len)
{
    size_t i, j;
    for (j = 0; j + len <= pn; j += len / 2)
        for (i = 0; i + len <= hn; i++)
            if (memcmp(hay + i, pat + j, len) == 0) return 1;
    return 0;
}

/* Reads what side k has for channel id into got (at *have). */
static void s_read(t_pair *p, int k, uint32_t id, unsigned char *got,
                   size_t *have, size_t cap)
{
    int eof;
    ptrdiff_t r;
    while (*have < cap &&
           (r = alkt_channel_recv(&p->s[k], id, got + *have, cap - *have, &eof)) > 0)
        *have += (size_t)r;
}

static int s_closed_with(t_pair *p, int k, int code)
{
    alkt_event ev;
    do { ev = t_event(p, k); } while (ev.type != ALKT_EV_NONE &&
                                      ev.type != ALKT_EV_CLOSED);
    return ev.type == ALKT_EV_CLOSED && ev.code == code;
}

/* Side k lost the connection with code, and only the connection: no
 * CLOSED event, the session still there to resume. */
static int s_dropped_with(t_pair *p, int k, int code)
{
    alkt_event ev;
    int dropped = 0;
    while ((ev = t_event(p, k)).type != ALKT_EV_NONE) {
        if (ev.type == ALKT_EV_CLOSED) return 0;
        if (ev.type == ALKT_EV_DISCONNECTED) dropped = ev.code == code;
    }
    return dropped && p->s[k].state == ALKT__S_ACTIVE;
}

/* After a drop: both ends connect again, the session resumes, and side 1
 * reads the rest of id's bytes - all of out, once, in order, with have
 * bytes read before. */
static int s_resume_delivers(t_pair *p, uint32_t id, const unsigned char *out,
                             size_t n, unsigned char *got, size_t have)
{
    alkt_session_handle_disconnected(&p->s[0], p->now);
    alkt_session_handle_disconnected(&p->s[1], p->now);
    t_drain(p);
    t_connect(p);
    t_settle(p);
    if (!alkt_session_is_established(&p->s[1])) return 0;
    s_read(p, 1, id, got, &have, n);
    return have == n && memcmp(out, got, n) == 0;
}

TEST sealed_handshake_and_first_records_are_frozen(void)
{
    t_pair p;
    unsigned char buf[512];
    char hex[1025];
    size_t n;
    ASSERT(t_init(&p));
    t_connect(&p);
    n = alkt_session_poll_transmit(&p.s[0], buf, sizeof buf);
    hex_encode(buf, n, hex);
    /* as the plaintext HELLO, but flags 0, the client's ephemeral key
     * X25519_base(SHA-256("alkt1 ephemeral" || 32 x 02)), and so its MAC */
    ASSERT_STR_EQ("010000bb00000000414c4b5402020100"
                  "ec4dda100844b15c3fc504e43c33117303368de8d42d132522662651acc9b674"
                  "00000000000000000000000000000000" "0000000000000000"
                  "0000000000000000000000000000000000000000000000000000000000000000"
                  "00000400" "00004000" "00000004"
                  "a785ceb6f09e08d467b96b0d570dc416a278fb1211dae3cf8f11d2ca8e6df55e"
                  "000000012a05f200" "06" "6c6170746f70"
                  "1153912ca553ce3e7e5f025cbd06c71c9c7e12e233609703caf6c0beb7db55aa", hex);
    alkt_session_handle_input(&p.s[1], buf, n, p.now);
    n = alkt_session_poll_transmit(&p.s[1], buf, sizeof buf);
    ASSERT_EQ(8 + 151 + 8 + 32, n);
    hex_encode(buf + 8 + 108, 32, hex);
    ASSERT_STR_EQ(T_SEALED_SERVER_HELLO_EPH, hex);
    hex_encode(buf + 8 + 151, 40, hex);
    ASSERT_STR_EQ(T_SEALED_SERVER_AUTH, hex);
    alkt_session_handle_input(&p.s[0], buf, n, p.now);
    n = alkt_session_poll_transmit(&p.s[0], buf, sizeof buf);
    ASSERT_EQ(40, n);   /* the AUTH goes in clear, and nothing after it yet */
    hex_encode(buf, 40, hex);
    ASSERT_STR_EQ(T_SEALED_CLIENT_AUTH, hex);
    ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], buf, n, p.now));
    ASSERT_EQ(1, alkt_session_is_established(&p.s[1]));
    /* a keepalive: ACK and PING, one record each, counters 0 and 1 */
    p.now += 15000000000ull;
    alkt_session_handle_timeout(&p.s[0], p.now);
    n = alkt_session_poll_transmit(&p.s[0], buf, sizeof buf);
    ASSERT_EQ(2 * (2 + 16 + 16), n);
    hex_encode(buf, 34, hex);
    ASSERT_STR_EQ(T_SEALED_ACK0, hex);
    hex_encode(buf + 34, 34, hex);
    ASSERT_STR_EQ(T_SEALED_PING1, hex);
    /* and the server opens them */
    ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], buf, n, p.now));
    ASSERT_EQ(2u, p.s[1].rx_ctr);
    t_free(&p);
    PASS();
}

/* Channel bytes cross the wire sealed: no run of 12 of them shows, while
 * the same transfer in plaintext shows them (the check can fail). */
TEST sealed_channel_bytes_never_show_on_the_wire(void)
{
    static unsigned char out[3000], wire[8192], got[3000];
    int plain;
    size_t i;
    for (i = 0; i < sizeof out; i++) out[i] = (unsigned char)(i * 7 + i / 251);
    for (plain = 0; plain < 2; plain++) {
        t_pair p;
        uint32_t id;
        size_t wn, have = 0;
        ASSERT(plain ? t_init_plain(&p) : t_init(&p));
        ASSERT(t_open(&p, &id));
        ASSERT_EQ(3000, (int)alkt_channel_send(&p.s[0], id, out, sizeof out));
        wn = s_capture(&p, 0, wire, sizeof wire);
        ASSERT(wn > sizeof out);
        ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], wire, wn, p.now));
        s_read(&p, 1, id, got, &have, sizeof got);
        ASSERT_EQ(sizeof out, have);
        ASSERT_MEM_EQ(out, got, sizeof out);
        ASSERT_EQm(plain ? "plaintext bytes should show" : "sealed bytes showed",
                   plain, s_leaks(wire, wn, out, sizeof out, 12));
        t_free(&p);
    }
    PASS();
}

/* One transfer of 700 bytes in two sends, its records delivered one at a
 * time, the channel read after each; the byte at `flip` (none past the
 * end) changed first. at[]: where the records start (before the change);
 * cum[r]: bytes read after record r; *fail_at: the record whose delivery
 * failed (nrec: none), with its code in *rc. A failure ends the connection
 * only: the session resumes and every byte arrives once. */
static int s_transfer(const unsigned char *out, size_t flip, size_t cum[16],
                      size_t at[17], size_t *nrec, size_t *wn, size_t *fail_at,
                      int *rc)
{
    unsigned char wire[2048], got[700];
    size_t r, have = 0;
    t_pair p;
    uint32_t id;
    if (!t_init(&p) || !t_open(&p, &id)) return 0;
    if (alkt_channel_send(&p.s[0], id, out, 350) != 350 ||
        alkt_channel_send(&p.s[0], id, out + 350, 350) != 350)
        return 0;
    *wn = s_capture(&p, 0, wire, sizeof wire);
    *nrec = s_records(wire, *wn, at, 16);
    if (*nrec < 2 || at[*nrec] != *wn) return 0;
    if (flip < *wn) wire[flip] ^= (unsigned char)(1u << (flip % 8));
    *rc = ALKT_OK;
    *fail_at = *nrec;
    for (r = 0; r < *nrec; r++) {
        *rc = alkt_session_handle_input(&p.s[1], wire + at[r], at[r + 1] - at[r],
                                        p.now);
        if (*rc != ALKT_OK) {
            *fail_at = r;
            break;
        }
        s_read(&p, 1, id, got, &have, sizeof got);
        cum[r] = have;
    }
    /* whatever was read is the sender's, from the start */
    if (memcmp(out, got, have) != 0) return 0;
    if (*rc != ALKT_OK &&
        (!s_dropped_with(&p, 1, *rc) || !s_resume_delivers(&p, id, out, 700, got, have)))
        return 0;
    t_free(&p);
    return 1;
}

/* One byte changed anywhere in the records of a transfer: exactly what
 * the records before it carried is read (as in the same transfer
 * unchanged), nothing of the changed one, and the connection ends with
 * ALKT_ERR_DECRYPT at that record - the connection, not the session: a
 * party on the path can cut it, never end the session or change a byte
 * (after the resume every byte arrives once). */
TEST sealed_changed_record_ends_the_connection(void)
{
    static unsigned char out[700];
    size_t clean[16], cum[16], at[17], at2[17], nrec, wn, fail_at, i, r;
    int rc;
    for (i = 0; i < sizeof out; i++) out[i] = (unsigned char)(i * 31 + 5);
    ASSERT(s_transfer(out, (size_t)-1, clean, at, &nrec, &wn, &fail_at, &rc));
    ASSERT_EQ(ALKT_OK, rc);
    ASSERT_EQ(sizeof out, clean[nrec - 1]);
    for (i = 0; i < wn; i++) {
        size_t n2, wn2, k;
        ASSERT(s_transfer(out, i, cum, at2, &n2, &wn2, &fail_at, &rc));
        ASSERT_EQm("a changed byte went through", ALKT_ERR_DECRYPT, rc);
        for (k = 0; at[k + 1] <= i; k++) {}   /* the record holding byte i */
        /* it fails there - or later, when the change made its length
         * longer and it took the next record's bytes - and until then
         * only what the records before it carried is read */
        ASSERTm("failed before the changed record", fail_at >= k && fail_at < nrec);
        for (r = 0; r < fail_at; r++)
            ASSERT_EQm("bytes read from a changed record",
                       r < k ? clean[r] : (k ? clean[k - 1] : 0), cum[r]);
    }
    PASS();
}

TEST sealed_replayed_reordered_and_cut_records(void)
{
    static unsigned char out[900], wire[4096], got[900];
    size_t at[16], wn, nrec, have = 0, i;
    int k;
    for (i = 0; i < sizeof out; i++) out[i] = (unsigned char)(i * 17 + 3);
    for (k = 0; k < 5; k++) {
        t_pair p;
        uint32_t id;
        unsigned char bad[2];
        ASSERT(t_init(&p));
        ASSERT(t_open(&p, &id));
        for (i = 0; i < 3; i++)
            ASSERT_EQ(300, (int)alkt_channel_send(&p.s[0], id, out + 300 * i, 300));
        wn = s_capture(&p, 0, wire, sizeof wire);
        nrec = s_records(wire, wn, at, 16);
        ASSERT(nrec >= 3);
        have = 0;
        switch (k) {
        case 0:   /* the first record twice */
            ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], wire, at[1], p.now));
            s_read(&p, 1, id, got, &have, sizeof got);
            ASSERT_EQ(ALKT_ERR_DECRYPT,
                      alkt_session_handle_input(&p.s[1], wire, at[1], p.now));
            ASSERT(s_dropped_with(&p, 1, ALKT_ERR_DECRYPT));
            ASSERT(s_resume_delivers(&p, id, out, sizeof out, got, have));
            break;
        case 1:   /* the second before the first */
            ASSERT_EQ(ALKT_ERR_DECRYPT,
                      alkt_session_handle_input(&p.s[1], wire + at[1],
                                                at[2] - at[1], p.now));
            ASSERT(s_dropped_with(&p, 1, ALKT_ERR_DECRYPT));
            ASSERT(s_resume_delivers(&p, id, out, sizeof out, got, have));
            break;
        case 2:   /* a length no record can have: refused at once */
        case 3:
            bad[0] = 0;
            bad[1] = k == 2 ? 7 : 0;
            if (k == 3) bad[0] = (1024 + 8 + 1) >> 8, bad[1] = (1024 + 8 + 1) & 0xff;
            ASSERT_EQ(ALKT_ERR_DECRYPT,
                      alkt_session_handle_input(&p.s[1], bad, 2, p.now));
            ASSERT(s_dropped_with(&p, 1, ALKT_ERR_DECRYPT));
            ASSERT(s_resume_delivers(&p, id, out, sizeof out, got, have));
            break;
        default:  /* cut inside the second record, then the path drops:
                     after the resume every byte arrives, once, in order */
            ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], wire,
                                                         at[1] + 40, p.now));
            s_read(&p, 1, id, got, &have, sizeof got);
            ASSERT(have <= 300);   /* nothing of the cut record */
            alkt_session_handle_disconnected(&p.s[0], p.now);
            alkt_session_handle_disconnected(&p.s[1], p.now);
            t_connect(&p);
            t_settle(&p);
            ASSERT_EQ(1, alkt_session_is_established(&p.s[1]));
            s_read(&p, 1, id, got, &have, sizeof got);
            ASSERT_EQ(sizeof out, have);
            ASSERT_MEM_EQ(out, got, sizeof out);
            break;
        }
        t_free(&p);
    }
    PASS();
}

/* With 4 records per key, a transfer moves through many keys: no counter
 * reaches the limit, every byte arrives; a seal at the limit is refused,
 * and a session forced there ends rather than reuse a nonce. */
TEST sealed_rekey_before_the_counter_limit(void)
{
    static unsigned char out[65536], got[65536];
    t_pair p;
    uint32_t id;
    size_t sent = 0, have = 0, i, before;
    unsigned char h[ALKT_FRAME_HEADER] = {ALKT_FRAME_PING, 0, 0, 0, 0, 0, 0, 0};
    alkt_session_config c;
    int rounds = 0;
    t_config(&c, 0);
    c.rekey_records = 1;
    ASSERT_EQ(0, alkt_session_mem_size(&c));
    c.rekey_records = ((uint64_t)1 << 60) + 1;
    ASSERT_EQ(0, alkt_session_mem_size(&c));
    for (i = 0; i < sizeof out; i++) out[i] = (unsigned char)(i ^ (i >> 9));
    t_rekey = 4;
    ASSERT(t_init(&p));
    ASSERT_EQ(4u, p.s[0].rekey_records);
    ASSERT(t_open(&p, &id));
    while (have < sizeof out && rounds++ < 10000) {
        if (sent < sizeof out) {
            ptrdiff_t r = alkt_channel_send(&p.s[0], id, out + sent,
                                            sizeof out - sent);
            ASSERT(r >= 0);
            sent += (size_t)r;
        }
        t_move(&p, 0);
        ASSERT(p.s[0].tx_ctr < 4 && p.s[1].rx_ctr < 4);
        s_read(&p, 1, id, got, &have, sizeof got);
        t_move(&p, 1);
        ASSERT(p.s[1].tx_ctr < 4 && p.s[0].rx_ctr < 4);
    }
    ASSERT_EQ(sizeof out, have);
    ASSERT_MEM_EQ(out, got, sizeof out);
    ASSERT(p.s[0].rekeys >= 16);
    /* the last counter of a key is the REKEY record's; past it, nothing */
    p.s[0].tx_ctr = p.s[0].rekey_records;
    before = p.s[0].rec_len;
    ASSERT_EQ(ALKT_ERR_NONCE_LIMIT, alkt__seal_raw(&p.s[0], h, sizeof h, NULL, 0));
    ASSERT_EQ(before, p.s[0].rec_len);
    /* a session forced there ends instead of sealing */
    t_drain(&p);
    ASSERT_EQ(100, (int)alkt_channel_send(&p.s[0], id, out, 100));
    {
        unsigned char w[512];
        ASSERT_EQ(0, alkt_session_poll_transmit(&p.s[0], w, sizeof w));
    }
    ASSERT(s_closed_with(&p, 0, ALKT_ERR_NONCE_LIMIT));
    t_free(&p);
    PASS();
}

/* Records read where they lie (a whole record in one input): DATA is
 * decrypted straight into the channel's ring, which wraps inside records
 * of every size here - 1..1024-byte frames into a 4096-byte ring, moved
 * in whole batches (transmit_peek) or cut anywhere, read back in odd
 * pieces: every byte arrives as sent. */
TEST sealed_records_decrypted_into_the_ring(void)
{
    static unsigned char out[60000], got[60000];
    t_pair p;
    uint32_t id;
    size_t sent = 0, have = 0, i;
    uint64_t x = 12345;
    int rounds = 0;
    for (i = 0; i < sizeof out; i++) out[i] = (unsigned char)(i * 131 + (i >> 7));
    ASSERT(t_init(&p));
    ASSERT(t_open(&p, &id));
    while (have < sizeof out && rounds++ < 20000) {
        const void *q;
        size_t n, cut;
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        if (sent < sizeof out) {
            size_t want = 1 + (size_t)(x >> 33) % 1500;
            ptrdiff_t r;
            if (want > sizeof out - sent) want = sizeof out - sent;
            r = alkt_channel_send(&p.s[0], id, out + sent, want);
            ASSERT(r >= 0);
            sent += (size_t)r;
        }
        /* one input of everything due, or cut at a drawn byte */
        while ((n = alkt_session_transmit_peek(&p.s[0], &q)) > 0) {
            cut = (x >> 20) % 4 ? n : 1 + (size_t)(x >> 40) % n;
            ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], q, cut, p.now));
            ASSERT_EQ(ALKT_OK, alkt_session_transmit_done(&p.s[0], cut));
        }
        {   /* read in odd pieces, so the ring's free run starts anywhere */
            int eof;
            size_t cap = 1 + (size_t)(x >> 50) % 700;
            ptrdiff_t r;
            if (cap > sizeof got - have) cap = sizeof got - have;
            r = alkt_channel_recv(&p.s[1], id, got + have, cap, &eof);
            ASSERT(r >= 0);
            have += (size_t)r;
        }
        t_move(&p, 1);   /* credit and acks back */
    }
    ASSERT_EQ(sizeof out, have);
    ASSERT_MEM_EQ(out, got, sizeof out);
    t_free(&p);
    PASS();
}

/* seal_batch: the records one transmit_peek hands out (one send) - never
 * more than it (and a REKEY), more than the default 4 when it is larger
 * and that much is due; every byte arrives the same; memory grows by one
 * record a step. */
TEST sealed_seal_batch_bounds_a_send(void)
{
    static const uint32_t batches[3] = {1, 2, 16};
    static unsigned char out[4096], got[4096];
    const size_t r = ALKT__REC_OVERHEAD + ALKT_FRAME_HEADER + 1024; /* t_config's */
    alkt_session_config c;
    size_t m4, i;
    int b, k;
    t_config(&c, 0);
    c.seal_batch = ALKT_SEAL_BATCH_MAX + 1;
    ASSERT_EQ(0, alkt_session_mem_size(&c));
    c.seal_batch = 0;
    m4 = alkt_session_mem_size(&c);
    c.seal_batch = 4;
    ASSERT_EQ(m4, alkt_session_mem_size(&c));
    c.seal_batch = 16;
    ASSERT_EQ(m4 + alkt__align8(16 * r + 26) - alkt__align8(4 * r + 26),
              alkt_session_mem_size(&c));
    for (i = 0; i < sizeof out; i++) out[i] = (unsigned char)(i * 7 + (i >> 8));
    for (b = 0; b < 3; b++) {
        t_pair p;
        uint32_t ids[4];
        size_t n, most = 0;
        const void *q;
        memset(&p, 0, sizeof p);
        p.now = 5000000000ull;
        for (k = 0; k < 2; k++) {   /* a log with room for all 16 frames */
            t_config(&c, k);
            c.seal_batch = batches[b];
            c.log_size = 65536;
            n = alkt_session_mem_size(&c);
            p.mem[k] = (unsigned char *)malloc(n);
            ASSERT(p.mem[k] != NULL);
            ASSERT_EQ(ALKT_OK, alkt_session_init(&p.s[k], &c, p.mem[k], n, p.now));
        }
        ASSERT(t_open_all(&p, ids));
        for (k = 0; k < 4; k++)   /* a window each: 16 frames due */
            ASSERT_EQ((ptrdiff_t)sizeof out,
                      alkt_channel_send(&p.s[0], ids[k], out, sizeof out));
        while ((n = alkt_session_transmit_peek(&p.s[0], &q)) > 0) {
            ASSERT(n <= batches[b] * r + ALKT__REC_OVERHEAD + ALKT_FRAME_HEADER);
            if (n > most) most = n;
            ASSERT_EQ(ALKT_OK, alkt_session_handle_input(&p.s[1], q, n, p.now));
            ASSERT_EQ(ALKT_OK, alkt_session_transmit_done(&p.s[0], n));
        }
        if (batches[b] > 4) ASSERT(most > 4 * r + ALKT__REC_OVERHEAD + ALKT_FRAME_HEADER);
        t_settle(&p);
        for (k = 0; k < 4; k++) {
            size_t have = 0;
            s_read(&p, 1, ids[k], got, &have, sizeof got);
            ASSERT_EQ(sizeof out, have);
            ASSERT_MEM_EQ(out, got, sizeof out);
        }
        t_free(&p);
    }
    PASS();
}

/* A resume runs a new ephemeral exchange: new keys both ways, counters from
 * 0, and the resume token never crosses the wire. */
TEST sealed_resume_derives_fresh_keys(void)
{
    static unsigned char out[2000], got[2000], wire[8192];
    t_pair p;
    uint32_t id;
    unsigned char old_tx[2][ALKT_AEAD_KEY], old_rx[2][ALKT_AEAD_KEY];
    size_t have = 0, wn = 0, i;
    int k, round;
    for (i = 0; i < sizeof out; i++) out[i] = (unsigned char)(i * 3 + 1);
    ASSERT(t_init(&p));
    ASSERT(t_open(&p, &id));
    for (round = 0; round < 2; round++) {
        for (k = 0; k < 2; k++) {
            memcpy(old_tx[k], p.s[k].tx_key, ALKT_AEAD_KEY);
            memcpy(old_rx[k], p.s[k].rx_key, ALKT_AEAD_KEY);
        }
        ASSERT_EQ(1000, (int)alkt_channel_send(&p.s[0], id, out + 1000 * round, 1000));
        alkt_session_handle_disconnected(&p.s[0], p.now);
        alkt_session_handle_disconnected(&p.s[1], p.now);
        t_connect(&p);
        /* the resume handshake and what follows, watched on the wire */
        for (i = 0; i < 20; i++) {
            for (k = 0; k < 2; k++) {
                size_t n = s_capture(&p, k, wire + wn, sizeof wire - wn);
                alkt_session_handle_input(&p.s[1 - k], wire + wn, n, p.now);
                wn += n;
            }
        }
        ASSERT_EQ(1, alkt_session_is_established(&p.s[0]));
        for (k = 0; k < 2; k++) {
            ASSERT(memcmp(old_tx[k], p.s[k].tx_key, ALKT_AEAD_KEY) != 0);
            ASSERT(memcmp(old_rx[k], p.s[k].rx_key, ALKT_AEAD_KEY) != 0);
        }
        ASSERT_MEM_EQ(p.s[0].tx_key, p.s[1].rx_key, ALKT_AEAD_KEY);
        ASSERT_MEM_EQ(p.s[1].tx_key, p.s[0].rx_key, ALKT_AEAD_KEY);
        ASSERT(p.s[0].tx_ctr < 8 && p.s[1].tx_ctr < 8);
        ASSERT_EQ(0, s_leaks(wire, wn, p.s[0].token, sizeof p.s[0].token, 8));
        s_read(&p, 1, id, got, &have, sizeof got);
        ASSERT_EQ((size_t)1000 * (size_t)(round + 1), have);
    }
    ASSERT_MEM_EQ(out, got, sizeof out);
    t_free(&p);
    PASS();
}

/* An encrypted and a plaintext peer refuse each other with ALKT_ERR_CIPHER
 * (on either side): no downgrade, no silent plaintext. */
TEST sealed_and_plaintext_peers_refuse_each_other(void)
{
    int k;
    for (k = 0; k < 2; k++) {
        t_pair p;
        alkt_session_config c;
        unsigned char buf[512];
        size_t n;
        ASSERT(t_init(&p));
        /* side k becomes plaintext (its memory is larger than it needs) */
        t_config(&c, k);
        c.plaintext = 1;
        ASSERT_EQ(ALKT_OK, alkt_session_init(&p.s[k], &c, p.mem[k],
                                             alkt_session_mem_size(&c), p.now));
        t_connect(&p);
        n = alkt_session_poll_transmit(&p.s[0], buf, sizeof buf);
        ASSERT_EQ(ALKT_ERR_CIPHER, alkt_session_handle_input(&p.s[1], buf, n, p.now));
        ASSERT_EQ(0, alkt_session_is_established(&p.s[1]));
        t_free(&p);
    }
    {   /* the client checks the server's HELLO the same way */
        t_pair p;
        unsigned char buf[512];
        size_t n;
        ASSERT(t_init(&p));
        t_connect(&p);
        t_move(&p, 0);
        n = alkt_session_poll_transmit(&p.s[1], buf, sizeof buf);
        buf[8 + 7] |= 2;   /* the server's HELLO says plaintext */
        ASSERT_EQ(ALKT_ERR_CIPHER, alkt_session_handle_input(&p.s[0], buf, n, p.now));
        ASSERT_EQ(0, alkt_session_is_established(&p.s[0]));
        t_free(&p);
    }
    PASS();
}

/* The tag is compared in full whatever byte differs: the count of
 * compared bytes (ALKTUNNEL_CT_COUNT, in this build) is 16 every time. */
TEST sealed_tag_compare_does_not_stop_early(void)
{
    unsigned char key[32], nonce[12], msg[40], sealed[56], out[40];
    int at;
    memset(key, 0x42, sizeof key);
    memset(nonce, 7, sizeof nonce);
    memset(msg, 'm', sizeof msg);
    alkt_aead_seal(sealed, key, nonce, NULL, 0, msg, sizeof msg);
    t_ct_compared = 0;
    ASSERT_EQ(ALKT_OK, alkt_aead_open(out, key, nonce, NULL, 0, sealed, sizeof sealed));
    ASSERT_EQ(16ul, t_ct_compared);
    for (at = 40; at < 56; at++) {
        sealed[at] ^= 0x10;
        t_ct_compared = 0;
        ASSERT_EQ(ALKT_ERR_AUTH,
                  alkt_aead_open(out, key, nonce, NULL, 0, sealed, sizeof sealed));
        ASSERTm("the tag comparison stopped early", 16ul == t_ct_compared);
        sealed[at] ^= 0x10;
    }
    PASS();
}

/* 1 when some 16-byte run of any of the n secrets (each len bytes; runs
 * of zeros left out: a wiped field is zeros too) is in the session struct
 * or its memory (mem_len bytes). */
static int s_holds_any(const alkt_session *s, const unsigned char *mem, size_t mem_len,
                       const unsigned char (*secrets)[96], size_t n, size_t len)
{
    static const unsigned char zero[16] = {0};
    size_t k, j;
    for (k = 0; k < n; k++)
        for (j = 0; j + 16 <= len; j += 8)
            if (memcmp(secrets[k] + j, zero, 16) != 0 &&
                (s_leaks((const unsigned char *)s, sizeof *s, secrets[k] + j, 16, 16) ||
                 s_leaks(mem, mem_len, secrets[k] + j, 16, 16)))
                return 1;
    return 0;
}

/* Keys go with the session: after a close (the GOAWAY out, the
 * connection done) neither side holds a run of its traffic keys, AUTH
 * key, resume token or the secret's HMAC state anywhere in the struct or
 * its memory; alkt_session_wipe takes the channel bytes and everything
 * else too. The check can fail: while the session lives, it finds them. */
TEST sealed_close_and_wipe_forget_every_key(void)
{
    static const unsigned char msg[] = "channel bytes no one may find afterwards, 48 b";
    unsigned char secrets[2][6][96], got[64];
    alkt_session_config c;
    size_t mem_len, have = 0;
    t_pair p;
    uint32_t id;
    int k;
    t_config(&c, 0);
    mem_len = alkt_session_mem_size(&c);
    ASSERT(t_init(&p));
    ASSERT(t_open(&p, &id));
    ASSERT_EQ((ptrdiff_t)sizeof msg, alkt_channel_send(&p.s[0], id, msg, sizeof msg));
    t_settle(&p);
    s_read(&p, 1, id, got, &have, sizeof got);
    ASSERT_EQ(sizeof msg, have);
    for (k = 0; k < 2; k++) {
        alkt_session *s = &p.s[k];
        memset(secrets[k], 0, sizeof secrets[k]);
        memcpy(secrets[k][0], s->tx_key, sizeof s->tx_key);
        memcpy(secrets[k][1], s->rx_key, sizeof s->rx_key);
        memcpy(secrets[k][2], s->auth_key, sizeof s->auth_key);
        memcpy(secrets[k][3], s->token, sizeof s->token);
        memcpy(secrets[k][4], (const unsigned char *)&s->key, 48);
        memcpy(secrets[k][5], (const unsigned char *)&s->key + 48, 48);
        ASSERTm("the check finds the keys of a live session",
                s_holds_any(s, p.mem[k], mem_len, (const unsigned char (*)[96])secrets[k], 6, 96));
    }
    ASSERT(s_leaks(p.mem[1], mem_len, msg, sizeof msg, 16));
    /* the client closes: its GOAWAY goes out sealed, then both forget */
    ASSERT_EQ(ALKT_OK, alkt_session_close(&p.s[0], 7));
    t_settle(&p);
    ASSERT(s_closed_with(&p, 1, ALKT_ERR_GOAWAY));
    alkt_session_handle_disconnected(&p.s[0], p.now);
    alkt_session_handle_disconnected(&p.s[1], p.now);
    t_drain(&p);
    for (k = 0; k < 2; k++)
        ASSERTm("a closed session still holds a key",
                !s_holds_any(&p.s[k], p.mem[k], mem_len,
                             (const unsigned char (*)[96])secrets[k], 6, 96));
    /* the wipe: no channel byte either, and every call refused */
    alkt_session_wipe(&p.s[1]);
    ASSERT(!s_leaks(p.mem[1], mem_len, msg, sizeof msg, 16));
    ASSERT(!s_leaks((const unsigned char *)&p.s[1], sizeof p.s[1], msg, sizeof msg, 16));
    ASSERT_EQ(ALKT_ERR_CLOSED, (int)alkt_channel_send(&p.s[1], id, msg, 1));
    t_free(&p);
    PASS();
}

SUITE(alkt_sealed_suite)
{
    RUN_TEST(sealed_handshake_and_first_records_are_frozen);
    RUN_TEST(sealed_channel_bytes_never_show_on_the_wire);
    RUN_TEST(sealed_changed_record_ends_the_connection);
    RUN_TEST(sealed_replayed_reordered_and_cut_records);
    RUN_TEST(sealed_rekey_before_the_counter_limit);
    RUN_TEST(sealed_seal_batch_bounds_a_send);
    RUN_TEST(sealed_records_decrypted_into_the_ring);
    RUN_TEST(sealed_resume_derives_fresh_keys);
    RUN_TEST(sealed_and_plaintext_peers_refuse_each_other);
    RUN_TEST(sealed_tag_compare_does_not_stop_early);
    RUN_TEST(sealed_close_and_wipe_forget_every_key);
}
