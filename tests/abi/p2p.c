/* Point-to-point of the MPI standard ABI: Send/Recv around a ring at
 * sizes below and above any eager limit, Ssend, Isend/Irecv completed by
 * Waitall, Waitany, Waitsome, Testall and Testany, ANY_SOURCE and
 * ANY_TAG, MPI's non-overtaking order, Sendrecv and Sendrecv_replace,
 * Probe, Iprobe and Get_count, messages to oneself and to MPI_PROC_NULL,
 * messages of two communicators that must not mix, persistent requests,
 * buffered mode, matched probes,
 * MPI_Cancel of a receive, and the errors a bad
 * rank, tag, count or a too small buffer raise with MPI_ERRORS_RETURN.
 * Every received element is checked. Prints "No Errors" at rank 0. */
#include "check.h"
#include <stdlib.h>

/* The value element i of a message from `from` with `tag` holds. */
static int value(int from, int tag, int i)
{
    return from * 1000003 + tag * 7919 + i;
}

static void fill(int *buf, int n, int from, int tag)
{
    for (int i = 0; i < n; i++)
        buf[i] = value(from, tag, i);
}

/* Counts the elements of buf that are not what `from` sent with `tag`. */
static int wrong(const int *buf, int n, int from, int tag)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += buf[i] != value(from, tag, i);
    return bad;
}

int main(int argc, char **argv)
{
    int n = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    int right = (me + 1) % n, left = (me + n - 1) % n;
    MPI_Status status;
    int count = -1;

    /* A ring at sizes from one element to 1 MiB: eager and rendezvous. */
    const int sizes[] = {0, 1, 100, 4000, 20000, 262144};
    int *out = malloc(sizeof(int) * 262144), *in = malloc(sizeof(int) * 262144);
    for (int s = 0; s < 6; s++) {
        int len = sizes[s];
        fill(out, len, me, s);
        for (int i = 0; i < len; i++)
            in[i] = -1;
        if (n == 1) {
            /* A blocking send to oneself may wait for the receive. */
            MPI_Request r;
            MPI_Isend(out, len, MPI_INT, right, s, MPI_COMM_WORLD, &r);
            MPI_Recv(in, len, MPI_INT, left, s, MPI_COMM_WORLD, &status);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
        } else if (me % 2 == 0) {
            MPI_Send(out, len, MPI_INT, right, s, MPI_COMM_WORLD);
            MPI_Recv(in, len, MPI_INT, left, s, MPI_COMM_WORLD, &status);
        } else {
            MPI_Recv(in, len, MPI_INT, left, s, MPI_COMM_WORLD, &status);
            MPI_Send(out, len, MPI_INT, right, s, MPI_COMM_WORLD);
        }
        CHECK(status.MPI_SOURCE == left && status.MPI_TAG == s, "ring %d: status %d %d", len,
              status.MPI_SOURCE, status.MPI_TAG);
        MPI_Get_count(&status, MPI_INT, &count);
        CHECK(count == len, "ring %d: count %d", len, count);
        CHECK(wrong(in, len, left, s) == 0, "ring %d: %d wrong", len, wrong(in, len, left, s));
    }

    /* Ssend to the right, after the right has posted its receive. */
    {
        int got[3] = {0, 0, 0}, mine[3];
        MPI_Request r;
        fill(mine, 3, me, 50);
        MPI_Irecv(got, 3, MPI_INT, left, 50, MPI_COMM_WORLD, &r);
        MPI_Ssend(mine, 3, MPI_INT, right, 50, MPI_COMM_WORLD);
        MPI_Wait(&r, &status);
        CHECK(wrong(got, 3, left, 50) == 0 && status.MPI_SOURCE == left, "ssend");
    }

    /* Every rank sends to every rank (itself too) at two sizes, by
     * Isend/Irecv; Waitall. */
    {
        int lens[2] = {16, 70000};
        for (int l = 0; l < 2; l++) {
            int len = lens[l];
            int *sendbuf = malloc(sizeof(int) * len * n), *recvbuf = malloc(sizeof(int) * len * n);
            MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * n);
            MPI_Status *st = malloc(sizeof(MPI_Status) * 2 * n);
            for (int p = 0; p < n; p++) {
                fill(sendbuf + p * len, len, me, 100 + p);
                MPI_Irecv(recvbuf + p * len, len, MPI_INT, p, 100 + me, MPI_COMM_WORLD, &reqs[p]);
            }
            for (int p = 0; p < n; p++)
                MPI_Isend(sendbuf + p * len, len, MPI_INT, p, 100 + p, MPI_COMM_WORLD, &reqs[n + p]);
            MPI_Waitall(2 * n, reqs, st);
            for (int p = 0; p < n; p++) {
                CHECK(wrong(recvbuf + p * len, len, p, 100 + me) == 0, "all to all %d from %d", len, p);
                CHECK(st[p].MPI_SOURCE == p && st[p].MPI_TAG == 100 + me, "all to all status from %d", p);
                CHECK(reqs[p] == MPI_REQUEST_NULL, "waitall left a request");
            }
            free(sendbuf);
            free(recvbuf);
            free(reqs);
            free(st);
        }
    }

    /* Non-overtaking: rank 0 sends 20 messages with one tag to rank 1
     * then one with another tag; rank 1 first takes the other tag, then
     * the 20 in order with ANY_SOURCE and ANY_TAG. */
    if (n >= 2 && me < 2) {
        int msg[2];
        if (me == 0) {
            for (int k = 0; k < 20; k++) {
                msg[0] = k;
                msg[1] = k * k;
                MPI_Send(msg, 2, MPI_INT, 1, 7, MPI_COMM_WORLD);
            }
            msg[0] = -1;
            MPI_Send(msg, 2, MPI_INT, 1, 8, MPI_COMM_WORLD);
        } else {
            MPI_Recv(msg, 2, MPI_INT, 0, 8, MPI_COMM_WORLD, &status);
            CHECK(msg[0] == -1 && status.MPI_TAG == 8, "tag 8 first: %d", msg[0]);
            for (int k = 0; k < 20; k++) {
                MPI_Recv(msg, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status);
                CHECK(msg[0] == k && msg[1] == k * k && status.MPI_SOURCE == 0 && status.MPI_TAG == 7,
                      "message %d came as %d (tag %d)", k, msg[0], status.MPI_TAG);
            }
        }
    }

    /* ANY_SOURCE: rank 0 gathers one message from every other rank, by
     * Waitany and Waitsome on receives from anyone. */
    {
        if (me == 0) {
            int *got = calloc(n, sizeof(int)), seen = 0;
            int *vals = malloc(sizeof(int) * n);
            MPI_Request *reqs = malloc(sizeof(MPI_Request) * n);
            for (int k = 0; k < n - 1; k++)
                MPI_Irecv(&vals[k], 1, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &reqs[k]);
            int index = -1, outcount = 0, idx[64];
            MPI_Status sts[64];
            if (n > 1) {
                MPI_Waitany(n - 1, reqs, &index, &status);
                CHECK(index >= 0 && vals[index] == value(status.MPI_SOURCE, 9, 0), "waitany value");
                got[status.MPI_SOURCE]++;
                seen++;
            }
            while (seen < n - 1) {
                MPI_Waitsome(n - 1, reqs, &outcount, idx, sts);
                CHECK(outcount >= 1, "waitsome outcount %d", outcount);
                for (int k = 0; k < outcount; k++) {
                    CHECK(vals[idx[k]] == value(sts[k].MPI_SOURCE, 9, 0), "waitsome value");
                    got[sts[k].MPI_SOURCE]++;
                    seen++;
                }
            }
            MPI_Waitsome(n - 1, reqs, &outcount, idx, sts);
            CHECK(outcount == MPI_UNDEFINED, "waitsome of null requests gave %d", outcount);
            for (int p = 1; p < n; p++)
                CHECK(got[p] == 1, "rank %d sent %d times", p, got[p]);
            free(got);
            free(vals);
            free(reqs);
        } else {
            int v = value(me, 9, 0);
            MPI_Send(&v, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
        }
    }

    /* Probe and Iprobe, then a receive sized by Get_count. */
    {
        int len = 1000 + 37 * me, *mine = malloc(sizeof(int) * len);
        fill(mine, len, me, 11);
        MPI_Request r;
        MPI_Isend(mine, len, MPI_INT, right, 11, MPI_COMM_WORLD, &r);
        MPI_Probe(left, 11, MPI_COMM_WORLD, &status);
        MPI_Get_count(&status, MPI_INT, &count);
        int expect = 1000 + 37 * left;
        CHECK(count == expect && status.MPI_SOURCE == left && status.MPI_TAG == 11, "probe count %d", count);
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &flag, &status);
        CHECK(flag && status.MPI_SOURCE == left, "iprobe after probe");
        MPI_Get_count(&status, MPI_CHAR, &count);
        CHECK(count == expect * (int)sizeof(int), "byte count %d", count);
        int *got = malloc(sizeof(int) * count);
        MPI_Recv(got, expect, MPI_INT, left, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(wrong(got, expect, left, 11) == 0, "probed message");
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, &status);
        CHECK(!flag, "iprobe found a message never sent");
        free(got);
        free(mine);
    }

    /* Sendrecv around the ring; Sendrecv_replace the other way. */
    {
        int a[5], b[5];
        fill(a, 5, me, 20);
        MPI_Sendrecv(a, 5, MPI_INT, right, 20, b, 5, MPI_INT, left, 20, MPI_COMM_WORLD, &status);
        CHECK(wrong(b, 5, left, 20) == 0 && status.MPI_SOURCE == left, "sendrecv");
        fill(a, 5, me, 21);
        MPI_Sendrecv_replace(a, 5, MPI_INT, left, 21, right, 21, MPI_COMM_WORLD, &status);
        CHECK(wrong(a, 5, right, 21) == 0 && status.MPI_SOURCE == right, "sendrecv_replace");
    }

    /* To oneself, small and large, received in order; Testany; PROC_NULL. */
    {
        int big = 100000, *a = malloc(sizeof(int) * big), *b = malloc(sizeof(int) * big);
        int s1[4], r1[4];
        fill(a, big, me, 30);
        fill(s1, 4, me, 31);
        MPI_Request reqs[2];
        MPI_Isend(a, big, MPI_INT, me, 30, MPI_COMM_WORLD, &reqs[0]);
        MPI_Isend(s1, 4, MPI_INT, me, 31, MPI_COMM_WORLD, &reqs[1]);
        MPI_Recv(r1, 4, MPI_INT, me, 31, MPI_COMM_WORLD, &status);
        CHECK(wrong(r1, 4, me, 31) == 0, "self small");
        MPI_Recv(b, big, MPI_INT, MPI_ANY_SOURCE, 30, MPI_COMM_WORLD, &status);
        CHECK(wrong(b, big, me, 30) == 0 && status.MPI_SOURCE == me, "self large");
        int index = -1, flag = 0;
        while (!flag)
            MPI_Testany(2, reqs, &index, &flag, MPI_STATUS_IGNORE);
        MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE);
        MPI_Testany(2, reqs, &index, &flag, MPI_STATUS_IGNORE);
        CHECK(flag && index == MPI_UNDEFINED, "testany of null requests");
        MPI_Send(a, 5, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD);
        MPI_Recv(b, 5, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &status);
        MPI_Get_count(&status, MPI_INT, &count);
        CHECK(status.MPI_SOURCE == MPI_PROC_NULL && status.MPI_TAG == MPI_ANY_TAG && count == 0,
              "proc null status %d %d %d", status.MPI_SOURCE, status.MPI_TAG, count);
        free(a);
        free(b);
    }

    /* Two communicators over the same ranks: the same tag never mixes. */
    {
        MPI_Comm dup;
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        int x = value(me, 40, 1), y = value(me, 40, 2), gx = 0, gy = 0;
        MPI_Request r[2];
        MPI_Isend(&x, 1, MPI_INT, right, 40, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(&y, 1, MPI_INT, right, 40, dup, &r[1]);
        MPI_Recv(&gy, 1, MPI_INT, left, 40, dup, MPI_STATUS_IGNORE);
        MPI_Recv(&gx, 1, MPI_INT, left, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(gx == value(left, 40, 1) && gy == value(left, 40, 2), "communicators mixed: %d %d", gx, gy);
        int flag = 0;
        while (!flag)
            MPI_Testall(2, r, &flag, MPI_STATUSES_IGNORE);
        MPI_Comm_free(&dup);
    }

    /* Persistent requests around the ring, started three times with new
     * data (by Startall, then Start each), completed by Waitall; inactive
     * ones are passed over by Waitany; Request_free frees them. */
    {
        int out3[4], in3[4];
        MPI_Request pr[2];
        MPI_Recv_init(in3, 4, MPI_INT, left, 80, MPI_COMM_WORLD, &pr[0]);
        MPI_Send_init(out3, 4, MPI_INT, right, 80, MPI_COMM_WORLD, &pr[1]);
        for (int k = 0; k < 3; k++) {
            fill(out3, 4, me, 80 + k);
            for (int i = 0; i < 4; i++)
                in3[i] = -1;
            if (k == 0) {
                MPI_Startall(2, pr);
            } else {
                MPI_Start(&pr[0]);
                MPI_Start(&pr[1]);
            }
            MPI_Status sts[2];
            MPI_Waitall(2, pr, sts);
            CHECK(wrong(in3, 4, left, 80 + k) == 0 && sts[0].MPI_SOURCE == left, "persistent round %d", k);
            CHECK(pr[0] != MPI_REQUEST_NULL && pr[1] != MPI_REQUEST_NULL, "a persistent request was freed by its wait");
        }
        int index = -5;
        MPI_Waitany(2, pr, &index, MPI_STATUS_IGNORE);
        CHECK(index == MPI_UNDEFINED, "waitany of inactive persistent requests gave %d", index);
        MPI_Request_free(&pr[0]);
        MPI_Request_free(&pr[1]);
        CHECK(pr[0] == MPI_REQUEST_NULL && pr[1] == MPI_REQUEST_NULL, "request_free left a persistent request");
    }

    /* Buffered mode: sends complete at once, the buffer bounds what is
     * in flight, detach waits for it to go. */
    {
        int big = 30000, size = 3 * (big * (int)sizeof(int) + MPI_BSEND_OVERHEAD);
        char *pool = malloc(size);
        int *b1 = malloc(sizeof(int) * big), *b2 = malloc(sizeof(int) * big), small[3];
        int *g1 = malloc(sizeof(int) * big), *g2 = malloc(sizeof(int) * big), gs[3];
        MPI_Buffer_attach(pool, size);
        fill(b1, big, me, 95);
        fill(b2, big, me, 96);
        fill(small, 3, me, 97);
        MPI_Request ib;
        MPI_Bsend(b1, big, MPI_INT, right, 95, MPI_COMM_WORLD);
        MPI_Ibsend(b2, big, MPI_INT, right, 96, MPI_COMM_WORLD, &ib);
        MPI_Bsend(small, 3, MPI_INT, right, 97, MPI_COMM_WORLD);
        /* The program's buffers are its own again. */
        for (int i = 0; i < big; i++)
            b1[i] = b2[i] = -1;
        MPI_Wait(&ib, MPI_STATUS_IGNORE);
        MPI_Recv(gs, 3, MPI_INT, left, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(g2, big, MPI_INT, left, 96, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(g1, big, MPI_INT, left, 95, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(wrong(g1, big, left, 95) == 0 && wrong(g2, big, left, 96) == 0 && wrong(gs, 3, left, 97) == 0,
              "buffered sends");
        void *back = NULL;
        int back_size = 0;
        MPI_Buffer_detach(&back, &back_size);
        CHECK(back == pool && back_size == size, "detach gave %p %d", back, back_size);
        free(pool);
        free(b1);
        free(b2);
        free(g1);
        free(g2);
    }

    /* Matched probes: Mprobe takes a message (a plain receive no longer
     * sees it), Mrecv receives it; Improbe and Imrecv likewise. */
    {
        int a[5], b[3], got5[5], got3[3], flag = 0, count5 = -1;
        fill(a, 5, me, 110);
        fill(b, 3, me, 111);
        MPI_Request rq[2];
        MPI_Isend(a, 5, MPI_INT, right, 110, MPI_COMM_WORLD, &rq[0]);
        MPI_Isend(b, 3, MPI_INT, right, 111, MPI_COMM_WORLD, &rq[1]);
        MPI_Message msg;
        MPI_Mprobe(left, 110, MPI_COMM_WORLD, &msg, &status);
        MPI_Get_count(&status, MPI_INT, &count5);
        CHECK(count5 == 5 && status.MPI_SOURCE == left, "mprobe count %d", count5);
        int there = 1;
        MPI_Iprobe(left, 110, MPI_COMM_WORLD, &there, MPI_STATUS_IGNORE);
        CHECK(!there, "a matched message was still there for Iprobe");
        MPI_Mrecv(got5, 5, MPI_INT, &msg, &status);
        CHECK(msg == MPI_MESSAGE_NULL && wrong(got5, 5, left, 110) == 0, "mrecv");
        while (!flag)
            MPI_Improbe(MPI_ANY_SOURCE, 111, MPI_COMM_WORLD, &flag, &msg, &status);
        MPI_Request ir;
        MPI_Imrecv(got3, 3, MPI_INT, &msg, &ir);
        MPI_Wait(&ir, &status);
        CHECK(wrong(got3, 3, left, 111) == 0 && status.MPI_SOURCE == left, "imrecv");
        MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
        MPI_Mprobe(MPI_PROC_NULL, 0, MPI_COMM_WORLD, &msg, &status);
        CHECK(msg == MPI_MESSAGE_NO_PROC && status.MPI_SOURCE == MPI_PROC_NULL, "mprobe of MPI_PROC_NULL");
        MPI_Mrecv(got3, 3, MPI_INT, &msg, &status);
        CHECK(msg == MPI_MESSAGE_NULL, "mrecv of MPI_MESSAGE_NO_PROC");
    }

    /* Request_get_status leaves the request to Wait. */
    {
        int x = value(me, 90, 0), y = -1, flag = 0;
        MPI_Request rr, rs;
        MPI_Irecv(&y, 1, MPI_INT, left, 90, MPI_COMM_WORLD, &rr);
        MPI_Isend(&x, 1, MPI_INT, right, 90, MPI_COMM_WORLD, &rs);
        while (!flag)
            MPI_Request_get_status(rr, &flag, &status);
        CHECK(status.MPI_SOURCE == left && status.MPI_TAG == 90 && rr != MPI_REQUEST_NULL, "get_status of a receive");
        MPI_Wait(&rr, &status);
        MPI_Wait(&rs, MPI_STATUS_IGNORE);
        CHECK(y == value(left, 90, 0) && rr == MPI_REQUEST_NULL, "after get_status: %d", y);
    }

    /* A receive nothing matches, cancelled; one that matched is not. */
    {
        int v = 0, w = value(me, 70, 0), flag = -1;
        MPI_Request r;
        MPI_Irecv(&v, 1, MPI_INT, MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &r);
        MPI_Cancel(&r);
        MPI_Wait(&r, &status);
        MPI_Test_cancelled(&status, &flag);
        CHECK(flag == 1 && r == MPI_REQUEST_NULL, "cancelled receive: flag %d", flag);
        MPI_Request two[2];
        MPI_Irecv(&v, 1, MPI_INT, left, 70, MPI_COMM_WORLD, &two[0]);
        MPI_Isend(&w, 1, MPI_INT, right, 70, MPI_COMM_WORLD, &two[1]);
        MPI_Wait(&two[1], MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        int done = 0;
        while (!done)
            MPI_Test(&two[0], &done, &status);
        MPI_Test_cancelled(&status, &flag);
        CHECK(flag == 0 && v == value(left, 70, 0), "a matched receive: flag %d, value %d", flag, v);
    }

    /* Errors, returned: nothing is sent or posted by a failed call. */
    {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int v = 1, class = 0, rc;
        rc = MPI_Send(&v, 1, MPI_INT, n, 0, MPI_COMM_WORLD);
        MPI_Error_class(rc, &class);
        CHECK(class == MPI_ERR_RANK, "send to rank %d: class %d", n, class);
        rc = MPI_Send(&v, 1, MPI_INT, right, -5, MPI_COMM_WORLD);
        MPI_Error_class(rc, &class);
        CHECK(class == MPI_ERR_TAG, "tag -5: class %d", class);
        rc = MPI_Send(&v, -1, MPI_INT, right, 0, MPI_COMM_WORLD);
        MPI_Error_class(rc, &class);
        CHECK(class == MPI_ERR_COUNT, "count -1: class %d", class);
        rc = MPI_Send(&v, 1, MPI_DATATYPE_NULL, right, 0, MPI_COMM_WORLD);
        MPI_Error_class(rc, &class);
        CHECK(class == MPI_ERR_TYPE, "null type: class %d", class);
        rc = MPI_Recv(&v, 1, MPI_INT, -7, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Error_class(rc, &class);
        CHECK(class == MPI_ERR_RANK, "recv from -7: class %d", class);
        rc = MPI_Send(&v, 1, MPI_INT, right, 0, MPI_COMM_NULL);
        MPI_Error_class(rc, &class);
        CHECK(class == MPI_ERR_COMM, "null comm: class %d", class);
        /* A message longer than the buffer: the part that fits, then
         * MPI_ERR_TRUNCATE; small and large. */
        int lens[2] = {8, 50000};
        for (int l = 0; l < 2; l++) {
            int len = lens[l], *s = malloc(sizeof(int) * len), *g = malloc(sizeof(int) * len);
            fill(s, len, me, 60);
            MPI_Request r;
            MPI_Isend(s, len, MPI_INT, right, 60, MPI_COMM_WORLD, &r);
            rc = MPI_Recv(g, len / 2, MPI_INT, left, 60, MPI_COMM_WORLD, &status);
            MPI_Error_class(rc, &class);
            CHECK(class == MPI_ERR_TRUNCATE, "truncated %d: class %d", len, class);
            CHECK(wrong(g, len / 2, left, 60) == 0, "truncated %d: the part that fits", len);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            free(s);
            free(g);
        }
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }

    free(out);
    free(in);
    MPI_Barrier(MPI_COMM_WORLD);
    report_errors();
    MPI_Finalize();
    return 0;
}
