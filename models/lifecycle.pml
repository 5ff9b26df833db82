/*
 * The connection loop of one supervised server, for SPIN (docs/design.md §7,
 * "The model"). fsm.pml is generated from fsm.Table (make modelgen): the
 * states, events, guards and fsm_fire. This file is the rest, by hand:
 *
 *   Loop      the supervisor's one goroutine: takes one message at a time
 *             from inbox and runs its handler (loop.go), firing events
 *             through fsm_fire with the facts lifecycle.facts derives.
 *   Gen(g)    generation g's attempt goroutine, its transport and its
 *             process: opens or fails, connects or fails, crashes, exits
 *             when ended or hangs for good.
 *   Timers    every clock.Timer: fires any time while armed; a stopped
 *             timer whose message is already in the inbox stays there.
 *   Client    requests (lazy start's demand, and the idle guard's Busy).
 *   Host      a manual reconnect, a dispose, a config change.
 *   Successor the supervisor a config change starts once the name is free.
 *   Watchdog  when nothing can move, the lifecycle must be at rest.
 *
 * Tasks (§25) have their own model, task.pml, over tasks_table.pml.
 *
 * Bounds (cpp, spin -D...): MAXFAULT faults of the environment (an open
 * that fails, a handshake that fails, a crash), MAXHANG processes that
 * never exit, NREQ requests, MAXATT retries per outage.
 */

#include "fsm.pml"

#ifndef MAXFAULT
#define MAXFAULT 2
#endif
#ifndef MAXHANG
#define MAXHANG 1
#endif
#ifndef NREQ
#define NREQ 1
#endif
#ifndef MAXATT
#define MAXATT 2
#endif
/* Generations per run; enterConnecting asserts the bound holds (raise it
 * with Timers' GEN_TIMERS lines when the other bounds grow). */
#define MAXG 8

/* Messages (message.go). For mRetryDue the number is the timer's seq,
 * for the host's messages 0, otherwise the generation. */
#define mDerived       0
#define mOpened        1
#define mAttemptOK     2
#define mAttemptFail   3
#define mConnTimeout   4
#define mDeferTimeout  5
#define mSessionEnded  6
#define mGone          7
#define mTermWindow    8
#define mRetryDue      9
#define mReconnect    10
#define mDispose      11
#define mDrainTimeout 12
#define mDemand       13
#define mIdleTimeout  14

#define NOEV 255 /* no event to fire */

#ifndef INBOX
#define INBOX 2
#endif
chan inbox = [INBOX] of { byte, byte };

/* Loop-owned (lifecycle). */
byte cur;                 /* lc.cur: the newest generation (0: none yet) */
byte nextGen;
byte attempt;             /* lc.budget: retries spent in this outage */
byte retrySeq;            /* identity of the armed retry timer */
bool idleStopping, demandPending, finished, registered, quarantined;
/* Per generation (generation.go); cleared when its barrier completes. */
bool inGens[MAXG + 1];    /* in lc.gens: the barrier is not complete */
bool started[MAXG + 1], deferred[MAXG + 1], opened[MAXG + 1];
bool attemptDone[MAXG + 1], goneL[MAXG + 1], failed[MAXG + 1];
bool ending[MAXG + 1], established[MAXG + 1];

/* Timers (armed flags). */
bool retryArmed, drainArmed;
byte retryFired;          /* seq of a fired retry timer whose message is in flight */
bool tConn[MAXG + 1], tDefer[MAXG + 1], tTerm[MAXG + 1], tIdle[MAXG + 1];

/* The world. */
byte procs;               /* live processes of the server, any supervisor: I1 */
byte attemptRunning;      /* attempt goroutines not returned */
bool kill[MAXG + 1];      /* the loop ended g: its context is cancelled, its process terminated */
byte faults, hangs;
bool lazy;                /* start: lazy with a cached catalog, or eager */
bool waiting;             /* a request waits to be served or refused */
bool inflight;            /* a request is in flight (the idle guard's Busy) */
bool config, released;    /* a config change wants a successor; the name is free */

/* send: Supervisor.send, which gives up once the loop has ended (also
 * while it waits for room in the inbox). */
#define send(k, n) if :: finished -> skip :: (!finished && nfull(inbox)) -> inbox!k,n fi

#define RESTING (fsm_st == S_established || fsm_st == S_exhausted || fsm_st == S_idle || fsm_st == S_disposed)

inline printMsg(k, n) {
	if
	:: k == mOpened -> printf("EV loop: gen %d opened\n", n)
	:: k == mAttemptOK -> printf("EV loop: gen %d attempt connected\n", n)
	:: k == mAttemptFail -> printf("EV loop: gen %d attempt failed\n", n)
	:: k == mConnTimeout -> printf("EV loop: gen %d connect timeout\n", n)
	:: k == mDeferTimeout -> printf("EV loop: gen %d deferral timeout\n", n)
	:: k == mSessionEnded -> printf("EV loop: gen %d session ended\n", n)
	:: k == mGone -> printf("EV loop: gen %d gone\n", n)
	:: k == mTermWindow -> printf("EV loop: gen %d termination window\n", n)
	:: k == mRetryDue -> printf("EV loop: retry timer %d due\n", n)
	:: k == mReconnect -> printf("EV loop: reconnect\n")
	:: k == mDispose -> printf("EV loop: dispose\n")
	:: k == mDrainTimeout -> printf("EV loop: drain timeout\n")
	:: k == mDemand -> printf("EV loop: demand\n")
	:: k == mIdleTimeout -> printf("EV loop: gen %d idle timeout\n", n)
	:: else -> skip
	fi
}

/* facts: lifecycle.facts, the one place a message becomes what guards read. */
inline facts(k, n) {
	f_Stale = false; f_Repeated = false; f_Busy = false;
	/* CallsOpen: the loop closes the generation to new requests before
	 * the idle guard reads Busy (idle.go's onIdleTimeout), within the
	 * one step this model's loop takes for a message: so it reads
	 * closed. Only the idle guard reads it. */
	f_CallsOpen = false;
	f_ReconnectDisabled = false; f_SignInRequired = false;
	f_BudgetSpent = (attempt >= MAXATT);
	f_IdleStop = idleStopping;
	if
	:: k == mRetryDue -> f_Stale = (n != retrySeq)
	:: k == mDeferTimeout -> f_Stale = (!inGens[n] || n != cur || !deferred[n])
	:: k == mReconnect || k == mDispose || k == mDrainTimeout || k == mDemand -> skip
	:: else ->
		f_Stale = (!inGens[n] || n != cur);
		f_Repeated = (inGens[n] && failed[n]);
		if :: k == mIdleTimeout -> f_Busy = inflight :: else -> skip fi
	fi
}

/* fire: lifecycle.fire for message (k, n). I7: a signal of a stale
 * generation (or timer) is never taken. */
inline fire(ev, k, n) {
	facts(k, n);
	fsm_fire(ev);
	assert(!(fsm_ok && f_Stale && k != mDerived))
}

/* pending(except): some generation other than except has a barrier
 * pending (lifecycle.barrierPending). */
/* pending(except, res): some generation other than except has a barrier
 * pending (lifecycle.barrierPending). */
inline pending(except, res) {
	res = false;
	for (i : 1 .. MAXG) {
		if :: i != except && inGens[i] -> res = true :: else -> skip fi
	}
	i = 0
}

inline startAttempt(n) {
	deferred[n] = false; tDefer[n] = false;
	started[n] = true; tConn[n] = true;
	attemptRunning++;
	printf("EV loop: gen %d attempt starts\n", n);
	run Gen(n)
}

/* enterConnecting: generation n+1; its attempt waits for every older
 * barrier (deferred), so never two processes (I1). */
inline enterConnecting() {
	nextGen++;
	assert(nextGen <= MAXG); /* the bound on generations holds */
	cur = nextGen; inGens[cur] = true;
	pending(cur, res);
	if
	:: res -> deferred[cur] = true; tDefer[cur] = true;
		printf("EV loop: gen %d deferred behind an older barrier\n", cur)
	:: else -> startAttempt(cur)
	fi;
	res = false
}

/* endGen: the generation's teardown (lost.go): its timers stopped, its
 * context cancelled and its process terminated, the barrier's deadline
 * armed. A deferred attempt never ran: nothing to wait for. */
inline endGen(n) {
	if
	:: ending[n] || !inGens[n] -> skip
	:: else ->
		ending[n] = true;
		tConn[n] = false; tDefer[n] = false; tIdle[n] = false;
		if
		:: !started[n] -> attemptDone[n] = true; goneL[n] = true
		:: else -> kill[n] = true; tTerm[n] = true
		fi
	fi
}

inline armRetry() {
	attempt++;
	assert(attempt <= MAXATT); /* I4 */
	retrySeq++; retryArmed = true;
	printf("EV loop: retry timer %d armed (attempt %d)\n", retrySeq, attempt)
}

inline unregister() { registered = false }

inline finish(clean) {
	drainArmed = false; retryArmed = false;
	for (i : 1 .. MAXG) { tTerm[i] = false; tConn[i] = false; tDefer[i] = false; tIdle[i] = false }
	i = 0;
	unregister();
	finished = true;
	if
	:: clean -> released = true
	:: else -> quarantined = true
	fi
}

/* checkBarrier(n): n's barrier completes once its attempt returned and
 * its process is gone: n is forgotten (its later signals are stale), and
 * what waited for it moves on: lost's released, a deferred attempt, the
 * drain. */
inline checkBarrier(n) {
	if
	:: inGens[n] && ending[n] && attemptDone[n] && goneL[n] ->
		printf("EV loop: gen %d barrier complete\n", n);
		tTerm[n] = false;
		inGens[n] = false; started[n] = false; deferred[n] = false; opened[n] = false;
		attemptDone[n] = false; goneL[n] = false; failed[n] = false;
		ending[n] = false; established[n] = false; kill[n] = false;
		if
		:: fsm_st == S_lost && n == cur -> ev = E_released; ek = mDerived; en = n
		:: fsm_st == S_connecting && deferred[cur] && !ending[cur] ->
			pending(cur, res);
			if :: !res -> startAttempt(cur) :: else -> skip fi;
			res = false
		:: fsm_st == S_draining -> cd = true
		:: else -> skip
		fi
	:: else -> skip
	fi
}

/* checkDrained: drained once no barrier is pending (dispose.go). */
inline checkDrained() {
	pending(0, res);
	if
	:: fsm_st == S_draining && !res -> ev = E_drained; ek = mDispose; en = 0
	:: else -> skip
	fi;
	res = false
}

/* take(k, n): a message's bookkeeping, and the event its handler fires
 * (loop.go's table of handlers). */
inline take(k, n) {
	ek = k; en = n;
	if
	:: k == mOpened ->
		if
		:: !inGens[n] -> kill[n] = true
		:: else -> opened[n] = true; if :: ending[n] -> kill[n] = true :: else -> skip fi
		fi
	:: k == mAttemptOK || k == mAttemptFail ->
		if
		:: inGens[n] ->
			attemptDone[n] = true;
			if :: !opened[n] -> goneL[n] = true :: else -> skip fi;
			cb = n;
			if :: k == mAttemptOK -> ev = E_connected :: else -> ev = E_failed fi
		:: else -> skip
		fi
	:: k == mConnTimeout || k == mDeferTimeout -> ev = E_failed
	:: k == mSessionEnded -> ev = E_closed
	:: k == mGone -> if :: inGens[n] -> goneL[n] = true; cb = n :: else -> skip fi
	:: k == mTermWindow -> ev = E_stuck
	:: k == mRetryDue -> if :: retryFired == n -> retryFired = 0 :: else -> skip fi; ev = E_retry_due
	:: k == mReconnect -> ev = E_reconnect
	:: k == mDispose -> ev = E_dispose
	:: k == mDrainTimeout -> ev = E_drain_timeout
	:: k == mDemand -> if :: idleStopping -> demandPending = true :: else -> ev = E_demand fi
	:: k == mIdleTimeout -> ev = E_idle_timeout
	:: else -> skip
	fi
}

/* effects: what the handler does once the row is taken (or refused). */
inline effects() {
	e = ev; ev = NOEV;
	if
	:: !fsm_ok ->
		/* A busy server's idle timer is armed again (idle.go). */
		if
		:: e == E_idle_timeout && inGens[en] && en == cur && fsm_st == S_established -> tIdle[en] = true
		:: else -> skip
		fi
	:: else ->
		if
		:: e == E_connected -> established[en] = true; registered = true; tConn[en] = false; tIdle[en] = true
		:: e == E_failed -> failed[en] = true; endGen(en); cb = en
		:: e == E_closed -> endGen(en); cb = en
		:: e == E_idle_timeout ->
			assert(!inflight); /* §20: an idle stop ends no request */
			idleStopping = true; endGen(en); cb = en
		:: e == E_stuck -> unregister()
		:: e == E_retry_due -> retryArmed = false; ec = true
		:: e == E_reconnect ->
			if
			:: from == S_established -> attempt = 0; endGen(cur); cb = cur
			:: from == S_backing_off -> retryArmed = false; ec = true
			:: from == S_exhausted -> attempt = 0; ec = true
			:: else -> ec = true
			fi
		:: e == E_dispose ->
			retryArmed = false;
			if :: cur != 0 -> endGen(cur); cb = cur :: else -> skip fi;
			drainArmed = true; cd = true
		:: e == E_drain_timeout -> finish(false)
		:: e == E_drained ->
			/* I6: disposed after a complete drain: no process, no attempt
			 * goroutine, no timer but the drain's own. */
			assert(procs == 0 && attemptRunning == 0 && !retryArmed);
			for (i : 1 .. MAXG) { assert(!tTerm[i] && !tConn[i] && !tDefer[i] && !tIdle[i]) }
			i = 0;
			finish(true)
		:: e == E_demand -> ec = true
		:: e == E_released ->
			if
			:: fsm_guard == K_idle_stop ->
				idleStopping = false;
				/* A demand during the idle stop's barrier starts the next
				 * generation now (idle.go's onIdle). */
				if :: demandPending -> demandPending = false; ev = E_demand; ek = mDemand; en = 0 :: else -> skip fi
			:: fsm_guard == K_budget_left -> armRetry()
			:: fsm_guard == K_budget_spent -> unregister()
			:: else -> skip
			fi
		:: else -> skip
		fi
	fi;
	fsm_clear(); e = 0
}

/* The invariants of §4 the model can express, after every message. */
inline invariants() {
	assert(procs <= 1);                                      /* I1 */
	assert(attempt <= MAXATT);                               /* I4 */
	assert(!retryArmed || fsm_st == S_backing_off);          /* I5: no other state has a retry timer */
	assert(fsm_st != S_backing_off || retryArmed || (retryFired != 0 && retryFired == retrySeq)); /* I5: backing-off has one */
	assert(fsm_st != S_disposed || !registered)              /* I3 */
}

/* loop_run: fire the handler's event, then what its effects ask for,
 * until nothing is left: one call site each for fsm_fire, checkBarrier
 * and enterConnecting keeps the verifier small. */
inline loop_run() {
	do
	:: ev != NOEV -> from = fsm_st; fire(ev, ek, en); effects()
	:: ev == NOEV && ec -> ec = false; enterConnecting()
	:: ev == NOEV && !ec && cb != 0 -> x = cb; cb = 0; checkBarrier(x); x = 0
	:: ev == NOEV && !ec && cb == 0 && cd -> cd = false; checkDrained()
	:: else -> break
	od;
	from = 0; ek = 0; en = 0
}

proctype Loop() {
	byte k, n, ev = NOEV, ek, en, e, from, i, x;
	bool res, cd, ec;
	byte cb;
	atomic {
		if
		:: lazy -> fsm_st = S_idle; registered = true;
			printf("EV loop: lazy start, idle (catalog from the cache)\n")
		:: else -> printf("EV loop: start\n"); ec = true
		fi
	}
end_loop:
	do
	:: finished -> break
	:: atomic { !finished && (ec || nempty(inbox)) ->
			if
			:: ec -> skip /* the start: gen 1 */
			:: else -> inbox?k,n; printMsg(k, n); take(k, n)
			fi;
			loop_run(); invariants(); k = 0; n = 0
		}
	od
}

/* Gen(g): the attempt goroutine of g, its transport and its process. */
proctype Gen(byte g) {
	bool ok, orphan;
	if
	:: atomic { faults < MAXFAULT -> faults++; printf("EV gen %d: open fails\n", g);
		send(mAttemptFail, g); attemptRunning-- }
		goto done
	:: atomic { procs++; printf("EV gen %d: process spawned\n", g);
		assert(procs <= 1); /* I1: never two processes of one server */
		if
		:: finished -> orphan = true; kill[g] = true /* nobody took it: the attempt ends it (R26) */
		:: (!finished && nfull(inbox)) -> inbox!mOpened,g
		fi }
	fi;
	/* The handshake and the lists. */
	if
	:: atomic { !kill[g] -> ok = true }
	:: atomic { faults < MAXFAULT -> faults++; printf("EV gen %d: handshake fails\n", g) }
	:: kill[g]
	fi;
	atomic {
		if
		:: orphan -> skip
		:: !orphan && finished -> orphan = true; kill[g] = true
		:: (!orphan && !finished && nfull(inbox)) ->
			if :: ok -> inbox!mAttemptOK,g :: else -> inbox!mAttemptFail,g fi;
			attemptRunning--
		fi
	}
	/* The process serves until its generation is ended, or crashes. */
	do
	:: kill[g] -> break
	:: atomic { ok && faults < MAXFAULT -> faults++; printf("EV gen %d: process crashes\n", g);
		send(mSessionEnded, g) }
		break
	od;
	/* It exits, or never does (no close signal: stuck, incomplete drain). */
	if
	:: atomic { hangs < MAXHANG -> hangs++; printf("EV gen %d: process hangs for good\n", g) }
end_hung:	false
	:: skip
	fi;
	atomic {
		procs--; printf("EV gen %d: process exited\n", g);
		send(mGone, g);
		if :: orphan -> attemptRunning-- :: else -> skip fi
	}
done:	skip
}

#define GEN_TIMERS(n) \
	:: atomic { tConn[n] -> tConn[n] = false; printf("EV timer: connect timeout of gen %d fires\n", n); send(mConnTimeout, n) } \
	:: atomic { tDefer[n] -> tDefer[n] = false; printf("EV timer: deferral timeout of gen %d fires\n", n); send(mDeferTimeout, n) } \
	:: atomic { tTerm[n] -> tTerm[n] = false; printf("EV timer: termination window of gen %d fires\n", n); send(mTermWindow, n) } \
	:: atomic { tIdle[n] -> tIdle[n] = false; printf("EV timer: idle timer of gen %d fires\n", n); send(mIdleTimeout, n) }

proctype Timers() {
end_timers:
	do
	:: atomic { retryArmed -> retryArmed = false; retryFired = retrySeq;
		printf("EV timer: retry timer %d fires\n", retrySeq); send(mRetryDue, retrySeq) }
	:: atomic { drainArmed -> drainArmed = false; printf("EV timer: drain timer fires\n"); send(mDrainTimeout, 0) }
	GEN_TIMERS(1)
	GEN_TIMERS(2)
	GEN_TIMERS(3)
	GEN_TIMERS(4)
	GEN_TIMERS(5)
	GEN_TIMERS(6)
	GEN_TIMERS(7)
	GEN_TIMERS(8)
	od
}

/* Client: NREQ requests, one after another (call.go's awaitReady). A
 * request sends demand when it finds the server idle or stopping for
 * idle, and looks again when the state changes; it is served once
 * established, refused in exhausted, draining or disposed. */
proctype Client() {
	byte n;
	bool sent, served;
end_client:
	do
	:: n < NREQ ->
		atomic { n++; inflight = true; waiting = true; printf("EV client: request %d\n", n) }
		do
		:: atomic { fsm_st == S_established -> waiting = false; served = true; printf("EV client: served\n"); break }
		:: atomic { fsm_st == S_exhausted || fsm_st == S_draining || fsm_st == S_disposed ->
			waiting = false; inflight = false; printf("EV client: refused\n"); break }
		:: atomic { !sent && (fsm_st == S_idle || idleStopping) -> sent = true;
			printf("EV client: demand\n"); send(mDemand, 0) }
		:: atomic { sent && !(fsm_st == S_idle || idleStopping) -> sent = false }
		od;
		atomic { sent = false; if :: served -> served = false; inflight = false; printf("EV client: call returns\n") :: else -> skip fi }
	od
}

/* Host: at most HOSTOPS of a manual reconnect, a dispose, a config
 * change (a dispose, then the successor); dispose and config change
 * exclude each other. */
#ifndef HOSTOPS
#define HOSTOPS 1
#endif
proctype Host() {
	bool rec, disp;
	byte ops;
end_host:
	do
	:: atomic { ops < HOSTOPS && !rec -> ops++; rec = true; printf("EV host: reconnect\n"); send(mReconnect, 0) }
	:: atomic { ops < HOSTOPS && !disp -> ops++; disp = true; printf("EV host: dispose\n"); send(mDispose, 0) }
	:: atomic { ops < HOSTOPS && !disp -> ops++; disp = true; config = true;
		printf("EV host: config change (dispose, then a successor)\n"); send(mDispose, 0) }
	od
}

/* Successor: Pool.Apply starts the changed server once its predecessor
 * released the name: after a complete drain, or after an incomplete one
 * once every close signal came and every goroutine returned. */
proctype Successor() {
end_succ:
	if
	:: atomic { config && released -> skip }
	:: atomic { config && quarantined && procs == 0 && attemptRunning == 0 -> skip }
	fi;
	atomic {
		procs++; printf("EV successor: process spawned\n");
		assert(procs <= 1) /* I1 across the supervisors of a name */
	}
end_succ_run:
	skip
}

proctype Watchdog() {
end_watch:
	timeout -> assert(RESTING && !waiting) /* no deadlock, no lost wake-up */
}

init {
	atomic {
		if :: lazy = true :: lazy = false fi;
		run Loop(); run Timers(); run Client(); run Host(); run Successor(); run Watchdog()
	}
}

#ifdef LIVE
/* Every demand is eventually served or refused (no lost wake-up). */
ltl demand { [] (waiting -> <> !waiting) }
/* The lifecycle never stays in transit: it rests again and again. */
ltl settles { [] <> (fsm_st == S_established || fsm_st == S_exhausted || fsm_st == S_idle || fsm_st == S_disposed) }
#endif
