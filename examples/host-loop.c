/* A whole CoordsCore host in C: the one wake (docs/ABI.md). It carries bytes with libcurl and
 * decides nothing: the core says what to send, when to wake, and what every answer means.
 *
 *   cc examples/host-loop.c -lcoordscore -lcurl -o host-loop
 *   COORDS_PASSPHRASE=… ./host-loop DATA_DIR [--turns N]     (N = 0: run until killed)
 *
 * Prints one line per answer (the core's JSON) and when it will wake next. */
#include <coordscore.h>
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct { uint8_t *data; size_t len, cap; } Answer;

static size_t take(char *bytes, size_t size, size_t count, void *context) {
    Answer *answer = context;
    size_t n = size * count;
    if (n > answer->cap - answer->len) return 0; /* over the core's cap: curl stops reading */
    memcpy(answer->data + answer->len, bytes, n);
    answer->len += n;
    return n;
}

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Performs one request; returns the HTTP status, or 0 with a description in *answer. */
static int perform(const CoordsHostRequest *r, Answer *answer) {
    CURL *curl = curl_easy_init();
    if (!curl) return 0;
    struct curl_slist *headers = NULL;
    char *lines = strdup((const char *)r->headers.data);
    for (char *line = strtok(lines, "\n"); line; line = strtok(NULL, "\n")) headers = curl_slist_append(headers, line);
    curl_easy_setopt(curl, CURLOPT_URL, (const char *)r->url.data);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, (const char *)r->method.data);
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    if (r->body.len > 0) {
        curl_easy_setopt(curl, CURLOPT_POSTFIELDS, (const char *)r->body.data);
        curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->body.len);
    }
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, take);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 5L); /* PROTOCOL.md §4.1's limits */
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
    long status = 0;
    CURLcode code = curl_easy_perform(curl);
    if (code == CURLE_OK) {
        curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    } else { /* no answer: the core is told why (status 0) */
        const char *why = curl_easy_strerror(code);
        answer->len = strlen(why) < answer->cap ? strlen(why) : answer->cap;
        memcpy(answer->data, why, answer->len);
    }
    curl_slist_free_all(headers);
    free(lines);
    curl_easy_cleanup(curl);
    return (int)status;
}

/* One turn: every request due now, performed and reported. Returns 0, or 1 on a library error. */
static int turn(CoordsApp *app) {
    CoordsError error = {0};
    for (;;) {
        CoordsHostRequest request = {0};
        if (coords_app_due_next(app, 0, &request, &error) != COORDS_OK) break;
        if (request.id == 0) return 0;
        size_t cap = request.max_response_bytes < 16u << 20 ? (size_t)request.max_response_bytes : 16u << 20;
        Answer answer = {malloc(cap + 1), 0, cap};
        int status = answer.data ? perform(&request, &answer) : 0;
        CoordsBuffer decided = {0};
        int32_t rc = coords_app_report(app, request.id, status, answer.data, answer.len, &decided, &error);
        if (rc == COORDS_OK) printf("%s %d: %s\n", (const char *)request.purpose.data, status, (const char *)decided.data);
        coords_buffer_free(&decided);
        free(answer.data);
        coords_host_request_free(&request);
        if (rc != COORDS_OK) break;
    }
    fprintf(stderr, "host-loop: %s\n", error.message ? error.message : "failed");
    coords_error_free(&error);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: COORDS_PASSPHRASE=… %s DATA_DIR [--turns N]\n", argv[0]);
        return 2;
    }
    long turns = argc >= 4 && strcmp(argv[2], "--turns") == 0 ? strtol(argv[3], NULL, 10) : 0;
    const char *passphrase = getenv("COORDS_PASSPHRASE");
    char options[512];
    snprintf(options, sizeof options, "{\"passphrase\": \"%s\"}", passphrase ? passphrase : "");
    CoordsApp *app = NULL;
    CoordsError error = {0};
    if (coords_app_open(argv[1], options, &app, &error) != COORDS_OK) {
        fprintf(stderr, "host-loop: %s\n", error.message);
        coords_error_free(&error);
        return 1;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int failed = 0;
    for (long done = 0; !failed && (turns == 0 || done < turns); done++) {
        failed = turn(app);
        uint64_t wake = 0, now = now_ms();
        if (failed || coords_app_next_wake(app, &wake, &error) != COORDS_OK) break;
        uint64_t wait = wake == 0 ? 60000 : wake > now ? wake - now : 0; /* 0: nothing ever due; poll a minute */
        printf("next wake in %llu ms\n", (unsigned long long)wait);
        fflush(stdout);
        if (turns != 0 && wait > 1000) wait = 1000; /* a bounded run (tests) does not sleep long */
        if (turns == 0 || done + 1 < turns) nanosleep(&(struct timespec){(time_t)(wait / 1000), (long)(wait % 1000) * 1000000L}, NULL);
    }
    coords_app_close(app, NULL);
    curl_global_cleanup();
    return failed;
}
