/* sign.c — see sign.h. A note is C2SP's signed note: the body, a blank line, then
 * signature lines "— NAME BASE64\n" (an em dash), BASE64 holding the 4-byte key hash
 * (SHA-256(NAME || 0x0A || 0x01 || public key)) and the 64-byte Ed25519 signature of the
 * body. Keys and signatures go through EVP only. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "merkle.h"
#include "sign.h"
#include "rs_util.h"

#define NAME_MAX_LEN 128
#define DASH "\xe2\x80\x94" /* U+2014 */
#define ED_SIG 64
#define ED_PUB 32

struct rs_seal_key {
    EVP_PKEY *pkey;
    char name[NAME_MAX_LEN + 1];
    unsigned char hash[4];
};

struct rs_seal_pub {
    EVP_PKEY *pkey;
    unsigned char raw[ED_PUB];
};

static int name_valid(const char *name)
{
    size_t n = strlen(name);
    if (!n || n > NAME_MAX_LEN)
        return 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p <= ' ' || *p == '+' || *p == 0x7f)
            return 0;
    return rs_utf8_valid(name, n);
}

static int key_hash(const char *name, const unsigned char *raw, unsigned char out[4])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len;
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
             EVP_DigestUpdate(ctx, name, strlen(name)) == 1 &&
             EVP_DigestUpdate(ctx, "\n\x01", 2) == 1 && EVP_DigestUpdate(ctx, raw, ED_PUB) == 1 &&
             EVP_DigestFinal_ex(ctx, md, &len) == 1;
    EVP_MD_CTX_free(ctx);
    if (ok)
        memcpy(out, md, 4);
    return ok ? 0 : -EIO;
}

/* What st is, for a message, when it is not a regular file. */
static const char *file_kind(const struct stat *st)
{
    return S_ISDIR(st->st_mode)                           ? "a directory"
           : S_ISFIFO(st->st_mode)                        ? "a FIFO"
           : S_ISSOCK(st->st_mode)                        ? "a socket"
           : S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode) ? "a device"
                                                          : "not a regular file";
}

/* The PEM file at path, opened once: what its type and mode allow is checked on the file
 * read. O_NONBLOCK so that a FIFO (or a device) named as the key cannot hang the open: it is
 * refused once fstat says what it is. */
static int open_pem(const char *path, int private, FILE **out, rs_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return rs_err_set(err, -errno, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return rs_err_set(err, -e, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return rs_err_set(err, -EINVAL, "%s is %s: a key is read from a regular file", path,
                          file_kind(&st));
    }
    if (private && (st.st_mode & 077)) {
        close(fd);
        return rs_err_set(err, -EPERM,
                          "permissions %04o for '%s' are too open: a seal key must not be "
                          "accessible by others than its owner (chmod 600 %s); this key is "
                          "not used",
                          (unsigned)(st.st_mode & 07777), path, path);
    }
    if (!(*out = fdopen(fd, "r"))) {
        close(fd);
        return rs_err_set(err, -ENOMEM, "out of memory");
    }
    return 0;
}

/* OpenSSL's passphrase callback: never a prompt (the default one waits on the terminal, and a
 * daemon or a script has none to answer); it notes that a passphrase was asked for. */
static int no_passphrase(char *buf, int size, int rwflag, void *asked)
{
    (void)buf;
    (void)size;
    (void)rwflag;
    *(int *)asked = 1;
    return -1;
}

int rs_seal_key_load(rs_seal_key **out, const char *path, const char *name, rs_err *err)
{
    char host[256];
    if (!name) {
        if (gethostname(host, sizeof host) != 0)
            return rs_err_set(err, -EINVAL, "no host name: give --seal-key-name");
        host[sizeof host - 1] = '\0';
        name = host;
    }
    if (!name_valid(name))
        return rs_err_set(err, -EINVAL,
                          "seal key name '%.80s': 1-%d bytes of UTF-8 without spaces, '+' or "
                          "control characters",
                          name, NAME_MAX_LEN);
    FILE *f;
    int rc = open_pem(path, 1, &f, err);
    if (rc)
        return rc;
    int asked = 0;
    EVP_PKEY *pkey = PEM_read_PrivateKey(f, NULL, no_passphrase, &asked);
    fclose(f);
    if (!pkey && asked)
        return rs_err_set(err, -EINVAL,
                          "%s is encrypted: runfs asks for no passphrase; give it the key "
                          "unencrypted, mode 600 (openssl pkey -in %s -out PLAIN.pem)",
                          path, path);
    if (!pkey || EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519) {
        EVP_PKEY_free(pkey);
        return rs_err_set(err, -EINVAL,
                          "%s is not an Ed25519 private key in PEM (make one with openssl "
                          "genpkey -algorithm ed25519 -out %s)",
                          path, path);
    }
    rs_seal_key *k = calloc(1, sizeof *k);
    unsigned char raw[ED_PUB];
    size_t len = sizeof raw;
    if (!k || EVP_PKEY_get_raw_public_key(pkey, raw, &len) != 1 || len != ED_PUB ||
        key_hash(name, raw, k->hash)) {
        free(k);
        EVP_PKEY_free(pkey);
        return rs_err_set(err, -ENOMEM, "cannot read the public half of %s", path);
    }
    k->pkey = pkey;
    (void)rs_fmt(k->name, sizeof k->name, "%s", name); /* name_valid: it fits */
    *out = k;
    return 0;
}

void rs_seal_key_free(rs_seal_key *k)
{
    if (!k)
        return;
    EVP_PKEY_free(k->pkey);
    free(k);
}

int rs_seal_pub_load(rs_seal_pub **out, const char *path, rs_err *err)
{
    FILE *f;
    int rc = open_pem(path, 0, &f, err);
    if (rc)
        return rc;
    int asked = 0;
    EVP_PKEY *pkey = PEM_read_PUBKEY(f, NULL, no_passphrase, &asked);
    fclose(f);
    rs_seal_pub *k = NULL;
    size_t len = ED_PUB;
    if (!pkey || EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519 || !(k = calloc(1, sizeof *k)) ||
        EVP_PKEY_get_raw_public_key(pkey, k->raw, &len) != 1 || len != ED_PUB) {
        free(k);
        EVP_PKEY_free(pkey);
        return rs_err_set(err, -EINVAL,
                          "%s is not an Ed25519 public key in PEM (openssl pkey -in KEY "
                          "-pubout writes one)",
                          path);
    }
    k->pkey = pkey;
    *out = k;
    return 0;
}

void rs_seal_pub_free(rs_seal_pub *k)
{
    if (!k)
        return;
    EVP_PKEY_free(k->pkey);
    free(k);
}

int rs_note_body(rs_buf *out, const rs_target *t, const rs_seal_row *row)
{
    rs_buf_reset(out);
    int rc = rs_buf_addf(out,
                         "runfs seal v%d\nthread %s\nrun %s\nstate %s\nupper_seq %lld\n"
                         "events %lld\n",
                         row->salted ? 2 : 1, t->thread_id, t->run_id, row->state,
                         (long long)row->upper_seq, (long long)row->event_count);
    if (!rc)
        rc = row->terminal_seq > 0
                 ? rs_buf_addf(out, "terminal_seq %lld\n", (long long)row->terminal_seq)
                 : rs_buf_addlit(out, "terminal_seq null\n");
    if (!rc)
        rc = rs_buf_addf(out, "digest %s\nroot %s\n%ssealed_at %s\n", row->digest, row->root,
                         row->salted ? "leaves salted\n" : "", row->sealed_at);
    return rc;
}

int rs_note_sign(const rs_seal_key *k, const char *body, size_t len, char *note, rs_err *err)
{
    unsigned char sig[4 + ED_SIG];
    size_t sig_len = ED_SIG;
    memcpy(sig, k->hash, 4);
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    int ok = ctx && EVP_DigestSignInit(ctx, NULL, NULL, NULL, k->pkey) == 1 &&
             EVP_DigestSign(ctx, sig + 4, &sig_len, (const unsigned char *)body, len) == 1 &&
             sig_len == ED_SIG;
    EVP_MD_CTX_free(ctx);
    if (!ok)
        return rs_err_set(err, -EIO, "cannot sign the seal with key %s", k->name);
    char b64[4 * ((sizeof sig + 2) / 3) + 1];
    EVP_EncodeBlock((unsigned char *)b64, sig, (int)sizeof sig);
    if (rs_fmt(note, RS_NOTE_MAX, "%.*s\n" DASH " %s %s\n", (int)len, body, k->name, b64) < 0)
        return rs_err_set(err, -ENAMETOOLONG, "the seal's note is over %d bytes", RS_NOTE_MAX);
    return 0;
}

/* One signature line (without its '\n'): name and the decoded key hash and signature. */
static int parse_sig_line(const char *p, size_t n, char *name, unsigned char *sig)
{
    if (n < sizeof DASH || memcmp(p, DASH " ", sizeof DASH) != 0)
        return -EINVAL;
    p += sizeof DASH;
    n -= sizeof DASH;
    const char *sp = memchr(p, ' ', n);
    if (!sp || sp == p || (size_t)(sp - p) > NAME_MAX_LEN)
        return -EINVAL;
    memcpy(name, p, (size_t)(sp - p));
    name[sp - p] = '\0';
    const char *b = sp + 1;
    size_t blen = n - (size_t)(b - p);
    /* 68 bytes are 92 characters of base64, with no padding. */
    unsigned char raw[72], again[93];
    if (blen != 92 || EVP_DecodeBlock(raw, (const unsigned char *)b, 92) != 69)
        return -EINVAL;
    /* Only the one spelling: base64 would also take other bits where padding goes. */
    if (EVP_EncodeBlock(again, raw, 4 + ED_SIG) != 92 || memcmp(again, b, 92) != 0)
        return -EINVAL;
    memcpy(sig, raw, 4 + ED_SIG);
    return 0;
}

int rs_note_verify(const rs_seal_pub *key, const char *note, size_t len, rs_err *err)
{
    /* The body ends at the first blank line; every line after it is a signature. */
    const char *sep = NULL;
    for (size_t i = 0; i + 1 < len; i++)
        if (note[i] == '\n' && note[i + 1] == '\n') {
            sep = note + i;
            break;
        }
    if (!sep || len == 0 || note[len - 1] != '\n' || memchr(note, '\0', len))
        return rs_err_set(err, -EINVAL,
                          "not a signed note: a body, a blank line and signature lines, "
                          "each ending in a newline");
    size_t body_len = (size_t)(sep - note) + 1;
    /* Every line after the body is a signature line, the ones after a good one too: bytes
     * appended to a signed note must not pass with it. */
    int lines = 0, by_key = 0, good = 0;
    for (const char *p = sep + 2, *end = note + len; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        char name[NAME_MAX_LEN + 1];
        unsigned char sig[4 + ED_SIG], hash[4];
        if (parse_sig_line(p, (size_t)(nl - p), name, sig))
            return rs_err_set(err, -EINVAL,
                              "line %d after the body is not a signature line '" DASH
                              " NAME BASE64': a note ends with its signatures",
                              lines + 1);
        lines++;
        p = nl + 1;
        if (key_hash(name, key->raw, hash))
            return rs_err_set(err, -EIO, "SHA-256 failed");
        if (good || memcmp(hash, sig, 4) != 0)
            continue;
        by_key++;
        EVP_MD_CTX *ctx = EVP_MD_CTX_new();
        int ok = ctx && EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key->pkey) == 1 &&
                 EVP_DigestVerify(ctx, sig + 4, ED_SIG, (const unsigned char *)note, body_len) == 1;
        EVP_MD_CTX_free(ctx);
        good = ok;
    }
    if (good)
        return 0;
    if (by_key)
        return rs_err_set(err, -EBADMSG, "the signature by this key does not verify");
    return rs_err_set(err, -EBADMSG, "%s",
                      lines ? "not signed by this key (no signature line carries its key hash)"
                            : "the note has no signature line");
}

/* ---- runfs verify-proof --------------------------------------------------------------------- */

/* doc's member key as a non-negative integer, a hash, a string. */
static int get_int(const rs_buf *doc, const char *key, int64_t *v)
{
    const char *p;
    size_t n;
    if (!rs_json_get(doc->buf, doc->len, key, strlen(key), &p, &n) || !n || n > 18)
        return -EINVAL;
    int64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -EINVAL;
        x = x * 10 + (p[i] - '0');
    }
    *v = x;
    return 0;
}

static int get_hash(const rs_buf *doc, const char *key, unsigned char *h)
{
    const char *p;
    size_t n;
    if (!rs_json_get(doc->buf, doc->len, key, strlen(key), &p, &n) || n < 2 || p[0] != '"')
        return -EINVAL;
    return rs_sha256_parse(p + 1, n - 2, h);
}

static int get_id(const rs_buf *doc, const char *key, rs_buf *out)
{
    const char *p;
    size_t n;
    if (!rs_json_get(doc->buf, doc->len, key, strlen(key), &p, &n) || p[0] != '"')
        return -EINVAL;
    return rs_json_unquote(out, p, n);
}

/* The seal's leaves: 1 salted, 0 plain (a seal.json made before salts says nothing). */
static int get_salted(const rs_buf *doc)
{
    const char *p;
    size_t n;
    return rs_json_get(doc->buf, doc->len, "leaves", 6, &p, &n) && n == 8 &&
           memcmp(p, "\"salted\"", 8) == 0;
}

/* A proof's salt: "salt", RS_SALT_LEN bytes in hex. */
static int get_salt(const rs_buf *doc, unsigned char *salt)
{
    const char *p;
    size_t n;
    if (!rs_json_get(doc->buf, doc->len, "salt", 4, &p, &n) || n != 2 + 2 * RS_SALT_LEN ||
        p[0] != '"')
        return -EINVAL;
    for (int i = 0; i < RS_SALT_LEN; i++) {
        int v = 0;
        for (int k = 1; k <= 2; k++) {
            char c = p[2 * i + k];
            int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
            if (d < 0)
                return -EINVAL;
            v = v << 4 | d;
        }
        salt[i] = (unsigned char)v;
    }
    return 0;
}

/* The path's hashes: a JSON array of "sha256:<hex>" strings. */
static int get_path(const rs_buf *doc, rs_buf *out)
{
    const char *p;
    size_t n;
    if (!rs_json_get(doc->buf, doc->len, "path", 4, &p, &n) || p[0] != '[')
        return -EINVAL;
    const char *end = p + n - 1; /* the ']' */
    p++;
    while (p < end) {
        unsigned char h[RS_SHA256_LEN];
        if (end - p < 73 || p[0] != '"' || p[72] != '"' || rs_sha256_parse(p + 1, 71, h) ||
            rs_buf_add(out, h, sizeof h))
            return -EINVAL;
        p += 73;
        if (p < end && *p++ != ',')
            return -EINVAL;
    }
    return 0;
}

int rs_proof_verify(const char *seal, size_t seal_len, const char *line, size_t line_len,
                    const char *proof, size_t proof_len, rs_err *err)
{
    rs_buf sd = RS_BUF_INIT, pd = RS_BUF_INIT, ld = RS_BUF_INIT, a = RS_BUF_INIT, b = RS_BUF_INIT,
           path = RS_BUF_INIT, leafline = RS_BUF_INIT;
    int64_t size, psize, seq, pseq, index;
    unsigned char root[RS_SHA256_LEN], proot[RS_SHA256_LEN], salt[RS_SALT_LEN];
    int rc, salted = 0;
    if ((rc = rs_json_canon(&sd, seal, seal_len, 0, NULL)) || get_int(&sd, "tree_size", &size) ||
        get_hash(&sd, "root", root)) {
        rc = rs_err_set(err, -EINVAL, "the seal is not a seal.json with tree_size and root");
        goto out;
    }
    if (rs_json_canon(&pd, proof, proof_len, 0, NULL) || get_int(&pd, "tree_size", &psize) ||
        get_int(&pd, "seq", &pseq) || get_int(&pd, "leaf_index", &index) ||
        get_hash(&pd, "root", proot) || get_path(&pd, &path)) {
        rc = rs_err_set(err, -EINVAL,
                        "the proof is not a proofs/<seq> document {seq, leaf_index, "
                        "tree_size, root, path}");
        goto out;
    }
    /* A salted seal's leaf is SHA-256(0x00 || salt || line): the proof carries the salt. */
    if ((salted = get_salted(&sd)) && get_salt(&pd, salt)) {
        rc = rs_err_set(err, -EINVAL,
                        "the seal's leaves are salted and the proof has no \"salt\" (32 hex "
                        "digits)");
        goto out;
    }
    /* The leaf is the line's exact bytes, with its newline, as the seal hashed them. */
    if ((rc = rs_buf_add(&leafline, line, line_len)) ||
        ((!line_len || line[line_len - 1] != '\n') && (rc = rs_buf_addch(&leafline, '\n')))) {
        rc = rs_err_set(err, -ENOMEM, "out of memory");
        goto out;
    }
    if (memchr(leafline.buf, '\n', leafline.len) != leafline.buf + leafline.len - 1 ||
        rs_json_canon(&ld, leafline.buf, leafline.len, 0, NULL) || get_int(&ld, "seq", &seq)) {
        rc = rs_err_set(err, -EINVAL, "the line is not one event line of events.jsonl");
        goto out;
    }
    if (get_id(&sd, "thread_id", &a) || get_id(&ld, "thread_id", &b) || a.len != b.len ||
        memcmp(a.buf, b.buf, a.len) != 0)
        rc = rs_err_set(err, -EBADMSG, "the line's thread_id is not the seal's");
    else if ((rs_buf_reset(&a), rs_buf_reset(&b), get_id(&sd, "run_id", &a)) ||
             get_id(&ld, "run_id", &b) || a.len != b.len || memcmp(a.buf, b.buf, a.len) != 0)
        rc = rs_err_set(err, -EBADMSG, "the line's run_id is not the seal's");
    else if (seq != pseq)
        rc = rs_err_set(err, -EBADMSG, "the line is seq %lld, the proof is for seq %lld",
                        (long long)seq, (long long)pseq);
    else if (psize != size || memcmp(root, proot, RS_SHA256_LEN) != 0)
        rc = rs_err_set(err, -EBADMSG, "the proof is for another tree than the seal's");
    else if (!rs_merkle_check(salted ? salt : NULL, leafline.buf, leafline.len, index, size,
                              (const unsigned char *)path.buf, path.len / RS_SHA256_LEN, root))
        rc = rs_err_set(err, -EBADMSG,
                        "the path does not lead from the line to the seal's root: the line "
                        "is not the one sealed at leaf %lld",
                        (long long)index);
out:
    rs_buf_release(&sd);
    rs_buf_release(&pd);
    rs_buf_release(&ld);
    rs_buf_release(&a);
    rs_buf_release(&b);
    rs_buf_release(&path);
    rs_buf_release(&leafline);
    return rc;
}
