// SPDX-License-Identifier: GPL-2.0
// perfsleuth's lock-wait tracer (docs/LOCKS.md). The kernel side:
//  - follows the process tree of the spawner (its pid is the one entry of
//    `roots`): each process it forks starts a new run (`seq`), which the
//    run's descendants inherit, so user space can attribute every wait to
//    the run it belongs to;
//  - times futex waits of those processes and sums them per (run, futex
//    address, user stack id), in the kernel;
//  - sums each thread's off-CPU time (blocked and preempted);
//  - sends user space, through a ring buffer, one sample of the user
//    registers and stack for each new (run, address, stack), which user
//    space unwinds with the binaries' DWARF CFI and symbolises.
// The programs' names start with psl_ (perfsleuth), so that `bpftool prog`
// shows whose they are.
// Nothing here depends on libbpf's headers: the few helpers are declared
// below, and task_struct fields are read with CO-RE relocations against the
// running kernel's BTF, which the loader (aya) applies.
#include <linux/bpf.h>
#include <linux/types.h>

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)BPF_FUNC_map_lookup_elem;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value, __u64 flags) = (void *)BPF_FUNC_map_update_elem;
static long (*bpf_map_delete_elem)(void *map, const void *key) = (void *)BPF_FUNC_map_delete_elem;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)BPF_FUNC_ktime_get_ns;
static __u64 (*bpf_get_current_pid_tgid)(void) = (void *)BPF_FUNC_get_current_pid_tgid;
static long (*bpf_get_stackid)(void *ctx, void *map, __u64 flags) = (void *)BPF_FUNC_get_stackid;
static long (*bpf_probe_read_kernel)(void *dst, __u32 size, const void *src) = (void *)BPF_FUNC_probe_read_kernel;
static long (*bpf_probe_read_user)(void *dst, __u32 size, const void *src) = (void *)BPF_FUNC_probe_read_user;
static void *(*bpf_ringbuf_reserve)(void *ringbuf, __u64 size, __u64 flags) = (void *)BPF_FUNC_ringbuf_reserve;
static void (*bpf_ringbuf_submit)(void *data, __u64 flags) = (void *)BPF_FUNC_ringbuf_submit;

#define NR_FUTEX 202
#define FUTEX_CMD_MASK 0x7f
#define STACK_BYTES 4096

// Only the fields read, relocated by name against the kernel's BTF.
struct task_struct {
    int pid;
    int tgid;
} __attribute__((preserve_access_index));

// The syscall's saved user registers (x86-64 `struct pt_regs`).
struct regs {
    unsigned long r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};

// Counters user space always reads and reports (indices in locks.rs, `Stat`).
enum { S_WAITS, S_WAIT_DROPS, S_STACK_FAILS, S_SAMPLES, S_SAMPLE_DROPS, S_SWITCHES, S_OFFCPU_DROPS, S_PROCESSES, S_PROCESS_DROPS, S_MAX };

struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 4); __type(key, __u32); __type(value, __u8); } roots SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 8192); __type(key, __u32); __type(value, __u32); } tgids SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, 1); __type(key, __u32); __type(value, __u32); } next_seq SEC(".maps");

struct start { __u64 ts; __u64 uaddr; __s64 stack; __u32 seq; __u32 pad; };
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16384); __type(key, __u32); __type(value, struct start); } inflight SEC(".maps");

struct key { __u64 uaddr; __s64 stack; __u32 seq; __u32 pad; };
struct val { __u64 wait_ns; __u64 count; };
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 65536); __type(key, struct key); __type(value, struct val); } waits SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_STACK_TRACE); __uint(max_entries, 8192); __uint(key_size, 4); __uint(value_size, 127 * 8); } stacks SEC(".maps");

struct off { __u64 ts; __u32 seq; __u32 preempted; };
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 16384); __type(key, __u32); __type(value, struct off); } offstart SEC(".maps");
struct tkey { __u32 seq; __u32 tid; };
struct tval { __u64 blocked_ns; __u64 preempted_ns; };
struct { __uint(type, BPF_MAP_TYPE_HASH); __uint(max_entries, 65536); __type(key, struct tkey); __type(value, struct tval); } offcpu SEC(".maps");

struct { __uint(type, BPF_MAP_TYPE_ARRAY); __uint(max_entries, S_MAX); __type(key, __u32); __type(value, __u64); } stats SEC(".maps");
struct { __uint(type, BPF_MAP_TYPE_RINGBUF); __uint(max_entries, 4 << 20); } samples SEC(".maps");

struct sample {
    __u32 seq, tgid, tid, len;
    __u64 uaddr;
    __s64 stack;
    __u64 ip, sp, bp;
    __u64 val; // the value the futex was expected to hold: a thread id for a join
    __u8 data[STACK_BYTES];
};

static __attribute__((always_inline)) void bump(__u32 i) {
    __u64 *v = bpf_map_lookup_elem(&stats, &i);
    if (v) __sync_fetch_and_add(v, 1);
}

SEC("raw_tracepoint/sched_process_fork")
int psl_fork(struct bpf_raw_tracepoint_args *ctx) {
    struct task_struct *child = (struct task_struct *)ctx->args[1];
    int pid = 0, tgid = 0;
    bpf_probe_read_kernel(&pid, sizeof(pid), __builtin_preserve_access_index(&child->pid));
    bpf_probe_read_kernel(&tgid, sizeof(tgid), __builtin_preserve_access_index(&child->tgid));
    if (pid == 0 || pid != tgid) return 0; // unreadable, or a new thread: its process is followed (or not) already
    __u32 parent = bpf_get_current_pid_tgid() >> 32, child_tgid = tgid, seq;
    if (bpf_map_lookup_elem(&roots, &parent)) {
        __u32 zero = 0;
        __u32 *n = bpf_map_lookup_elem(&next_seq, &zero);
        if (!n) return 0;
        seq = __sync_fetch_and_add(n, 1) + 1;
    } else {
        __u32 *s = bpf_map_lookup_elem(&tgids, &parent);
        if (!s) return 0;
        seq = *s;
    }
    if (bpf_map_update_elem(&tgids, &child_tgid, &seq, BPF_ANY)) bump(S_PROCESS_DROPS);
    else bump(S_PROCESSES);
    return 0;
}

SEC("raw_tracepoint/sched_process_exit")
int psl_proc_exit(struct bpf_raw_tracepoint_args *ctx) {
    __u64 pt = bpf_get_current_pid_tgid();
    __u32 tgid = pt >> 32, tid = (__u32)pt;
    bpf_map_delete_elem(&inflight, &tid);
    bpf_map_delete_elem(&offstart, &tid);
    // The leader's exit ends the process for our purposes (the map is finite).
    if (tgid == tid) bpf_map_delete_elem(&tgids, &tgid);
    return 0;
}

static __attribute__((always_inline)) int is_wait(unsigned long op) {
    op &= FUTEX_CMD_MASK;
    // WAIT, LOCK_PI, WAIT_BITSET, WAIT_REQUEUE_PI, LOCK_PI2
    return op == 0 || op == 6 || op == 9 || op == 11 || op == 13;
}

SEC("raw_tracepoint/sys_enter")
int psl_sys_enter(struct bpf_raw_tracepoint_args *ctx) {
    if (ctx->args[1] != NR_FUTEX) return 0;
    __u64 pt = bpf_get_current_pid_tgid();
    __u32 tgid = pt >> 32, tid = (__u32)pt;
    __u32 *seqp = bpf_map_lookup_elem(&tgids, &tgid);
    if (!seqp) return 0;
    struct regs *r = (struct regs *)ctx->args[0];
    // Only 64-bit code: a 32-bit task's syscall 202 is another call (its
    // code segment is __USER32_CS, not __USER_CS = 0x33).
    unsigned long cs = 0;
    bpf_probe_read_kernel(&cs, sizeof(cs), &r->cs);
    if (cs != 0x33) return 0;
    unsigned long uaddr = 0, op = 0;
    bpf_probe_read_kernel(&uaddr, sizeof(uaddr), &r->di);
    bpf_probe_read_kernel(&op, sizeof(op), &r->si);
    if (!is_wait(op)) return 0;
    struct start s = { .ts = 0, .uaddr = uaddr, .seq = *seqp };
    s.stack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
    if (s.stack < 0) bump(S_STACK_FAILS);
    struct key k = { .uaddr = uaddr, .stack = s.stack, .seq = s.seq };
    struct val zero = { 0, 0 };
    // A new (run, address, stack): user space gets one sample to unwind.
    if (!bpf_map_lookup_elem(&waits, &k)) {
        if (bpf_map_update_elem(&waits, &k, &zero, BPF_NOEXIST) == 0) {
            struct sample *e = bpf_ringbuf_reserve(&samples, sizeof(struct sample), 0);
            if (e) {
                e->seq = s.seq; e->tgid = tgid; e->tid = tid; e->uaddr = uaddr; e->stack = s.stack;
                bpf_probe_read_kernel(&e->ip, sizeof(e->ip), &r->ip);
                bpf_probe_read_kernel(&e->sp, sizeof(e->sp), &r->sp);
                bpf_probe_read_kernel(&e->bp, sizeof(e->bp), &r->bp);
                bpf_probe_read_kernel(&e->val, sizeof(e->val), &r->dx);
                // The copy fails whole where it would cross the stack's top.
                if (bpf_probe_read_user(e->data, STACK_BYTES, (void *)e->sp) == 0) e->len = STACK_BYTES;
                else if (bpf_probe_read_user(e->data, 1024, (void *)e->sp) == 0) e->len = 1024;
                else if (bpf_probe_read_user(e->data, 256, (void *)e->sp) == 0) e->len = 256;
                else e->len = 0;
                bpf_ringbuf_submit(e, 0);
                bump(S_SAMPLES);
            } else {
                bump(S_SAMPLE_DROPS);
            }
        }
    }
    s.ts = bpf_ktime_get_ns();
    if (bpf_map_update_elem(&inflight, &tid, &s, BPF_ANY)) bump(S_WAIT_DROPS);
    return 0;
}

SEC("raw_tracepoint/sys_exit")
int psl_sys_exit(struct bpf_raw_tracepoint_args *ctx) {
    __u32 tid = (__u32)bpf_get_current_pid_tgid();
    struct start *s = bpf_map_lookup_elem(&inflight, &tid);
    if (!s) return 0;
    __u64 d = bpf_ktime_get_ns() - s->ts;
    struct key k = { .uaddr = s->uaddr, .stack = s->stack, .seq = s->seq };
    bpf_map_delete_elem(&inflight, &tid);
    // EAGAIN: the futex no longer held the expected value, so the thread
    // never slept (the lock was released meanwhile): not a wait.
    if ((long)ctx->args[1] == -11) return 0;
    bump(S_WAITS);
    struct val *v = bpf_map_lookup_elem(&waits, &k);
    if (v) {
        __sync_fetch_and_add(&v->wait_ns, d);
        __sync_fetch_and_add(&v->count, 1);
    } else {
        struct val nv = { d, 1 };
        if (bpf_map_update_elem(&waits, &k, &nv, BPF_NOEXIST)) bump(S_WAIT_DROPS);
    }
    return 0;
}

SEC("raw_tracepoint/sched_switch")
int psl_switch(struct bpf_raw_tracepoint_args *ctx) {
    __u64 now = bpf_ktime_get_ns();
    // Runs in the outgoing task's context: `prev` is the current task.
    __u64 pt = bpf_get_current_pid_tgid();
    __u32 tgid = pt >> 32, tid = (__u32)pt;
    __u32 *seqp = bpf_map_lookup_elem(&tgids, &tgid);
    // prev_state (the fourth argument since Linux 5.18): 0 is still
    // runnable, so the thread now waits for a CPU (the `preempt` argument
    // only marks kernel preemption, not the usual return-to-user switch);
    // TASK_DEAD is a thread's last switch, which has no switch back.
    unsigned int prev_state = ctx->args[3];
    if (seqp && !(prev_state & 0x80)) {
        struct off o = { .ts = now, .seq = *seqp, .preempted = ctx->args[0] || prev_state == 0 };
        if (bpf_map_update_elem(&offstart, &tid, &o, BPF_ANY)) bump(S_OFFCPU_DROPS);
    }
    struct task_struct *next = (struct task_struct *)ctx->args[2];
    int npid = 0;
    bpf_probe_read_kernel(&npid, sizeof(npid), __builtin_preserve_access_index(&next->pid));
    __u32 ntid = npid;
    struct off *o = bpf_map_lookup_elem(&offstart, &ntid);
    if (!o) return 0;
    bump(S_SWITCHES);
    __u64 d = now - o->ts;
    struct tkey k = { .seq = o->seq, .tid = ntid };
    int preempted = o->preempted;
    bpf_map_delete_elem(&offstart, &ntid);
    struct tval *v = bpf_map_lookup_elem(&offcpu, &k);
    if (v) {
        if (preempted) __sync_fetch_and_add(&v->preempted_ns, d);
        else __sync_fetch_and_add(&v->blocked_ns, d);
    } else {
        struct tval nv = { preempted ? 0 : d, preempted ? d : 0 };
        if (bpf_map_update_elem(&offcpu, &k, &nv, BPF_NOEXIST)) bump(S_OFFCPU_DROPS);
    }
    return 0;
}

char LICENSE[] SEC("license") = "GPL";
