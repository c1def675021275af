// A reference server for measuring the load generator's ceiling, not a server to use: one thread, level-triggered
// epoll, one prebuilt response (status line, the headers a static file gets, body of N bytes) for every request
// terminator ("\r\n\r\n") in a read. Per request it makes one recv(2) and one send(2), no speculative empty read, and
// shares epoll_wait(2) among connections: less CPU per request than any real HTTP server can spend.
// Build: cc -O2 -o probe probe.c. Run: probe PORT BODY_BYTES (binds 127.0.0.1).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static char response[1 << 20];
static int response_length;

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PORT BODY_BYTES\n", argv[0]);
        return 2;
    }

    int port = atoi(argv[1]);
    int body = atoi(argv[2]);
    if (body < 0 || body > (1 << 19)) {
        fprintf(stderr, "BODY_BYTES must be 0..524288\n");
        return 2;
    }

    response_length = snprintf(response, sizeof response,
        "HTTP/1.1 200 OK\r\nContent-Length: %d\r\nContent-Type: application/octet-stream\r\n"
        "Date: Tue, 24 Nov 2026 00:00:00 GMT\r\nServer: probe\r\nLast-Modified: Tue, 24 Nov 2026 00:00:00 GMT\r\n"
        "ETag: \"1d2c3b4a5f6e\"\r\nAccept-Ranges: bytes\r\n\r\n", body);
    memset(response + response_length, 'a', (size_t)body);
    response_length += body;

    int one = 1;
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port) };
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) != 0 || listen(listener, 1024) != 0) {
        perror("bind/listen");
        return 1;
    }

    int poll = epoll_create1(0);
    struct epoll_event event = { .events = EPOLLIN, .data.fd = listener };
    epoll_ctl(poll, EPOLL_CTL_ADD, listener, &event);
    struct epoll_event ready[256];
    static char buffer[65536];
    // Bytes of a terminator seen at the end of the previous read, per descriptor (a request may split anywhere).
    static unsigned char matched[65536];

    for (;;) {
        int count = epoll_wait(poll, ready, 256, -1);
        for (int i = 0; i < count; i++) {
            int fd = ready[i].data.fd;
            if (fd == listener) {
                int client;
                while ((client = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    if (client >= 65536) {
                        close(client);
                        continue;
                    }

                    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    matched[client] = 0;
                    struct epoll_event watch = { .events = EPOLLIN, .data.fd = client };
                    epoll_ctl(poll, EPOLL_CTL_ADD, client, &watch);
                }

                continue;
            }

            ssize_t received = recv(fd, buffer, sizeof buffer, 0);
            if (received <= 0) {
                if (received < 0 && errno == EAGAIN) {
                    continue;
                }

                close(fd);
                continue;
            }

            static const char terminator[] = "\r\n\r\n";
            int requests = 0;
            unsigned char state = matched[fd];
            for (ssize_t k = 0; k < received; k++) {
                if (buffer[k] == terminator[state]) {
                    if (++state == 4) {
                        requests++;
                        state = 0;
                    }
                } else {
                    state = buffer[k] == '\r' ? 1 : 0;
                }
            }

            matched[fd] = state;
            for (int r = 0; r < requests; r++) {
                // Level-triggered epoll and a small response: a full socket buffer is not expected at the sizes
                // this measures; a short send ends the connection rather than corrupting it.
                if (send(fd, response, (size_t)response_length, MSG_NOSIGNAL) != response_length) {
                    close(fd);
                    break;
                }
            }
        }
    }
}
