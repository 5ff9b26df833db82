/*
 * One task (docs/design.md §25) whose server is lost, replayed, cancelled
 * or expires, for SPIN (docs/design.md §7, "The model"). tasks_table.pml is
 * generated from tasks.Table (make modelgen): the states, events, guards
 * and task_fire. This file is the rest, by hand:
 *
 *   Runner    the task's goroutine: s.Run (the proxy's runner, Call with
 *             its safe replay, §21), then Engine.finish. The server
 *             answers (a result, one too large to keep, a JSON-RPC error)
 *             or is lost with the call unanswered: a replay-safe call's
 *             first loss is noticed (Hooks.Resending) and the call sent
 *             once more on the next generation unless the task's context
 *             ended meanwhile; any other loss is returned.
 *   Asker     the server asks the host inside the call (Hooks.Ask, §24).
 *   Host      tasks/cancel, tasks/update (the answer), and tasks/get past
 *             the TTL (Engine.Get expires the task itself).
 *   TTL       the task's timer (Engine.expire).
 *   Disposer  Engine.Close with the task working; it waits for the run.
 *   Watchdog  when nothing can move, the task has ended and its run returned.
 *
 * Each engine step is one atomic block (Engine.mu); a method that looks
 * the task up under the lock and fires after releasing it (Cancel, Get,
 * expire, Update, Ask, Close) is two, so whatever ends the task between
 * them is explored. Such a late event in a finished task has no row when
 * the table declares none (expired, dispose, input_requested,
 * input_answered in a terminal state): the engine logs it and changes
 * nothing (a drop here, counted in drops; -DSTRICT makes it an error).
 *
 * Bound (cpp): MAXLOSS servers lost while the call runs. -DSENDCANCELLED
 * lets the replay go out after the task's context ended (see the branch).
 */

#include "tasks_table.pml"

#ifndef MAXLOSS
#define MAXLOSS 2
#endif

#define NONE 255
#define LIVE_TASK (ended == NONE)

bool hinted;        /* the tool is replay-safe (readOnly/idempotent, §21) */
byte sends;         /* times the call was sent to a server */
byte gen = 1;       /* the server's generation the call is on */
byte losses;        /* servers lost while the call ran */
bool replayed;      /* Call re-sent the call once already */
bool ctxDone;       /* the call's context is cancelled (endLocked, T4) */
bool gotResult;     /* the server answered with a tool result (T3) */
bool ranDone;       /* the run returned and finish fired (wg.Done) */
bool asking;        /* an input request is open */
bool hostAnswered;  /* tasks/update delivered the answer */
bool ttlPassed;     /* the clock is past the task's TTL */
bool closed;        /* Engine.Close ran */
byte ended = NONE;  /* the terminal state the task entered first (T1) */
bool unknownSaid;   /* failed saying the outcome is unknown: "not sent again" */
byte drops;         /* late events without a row (logged by the engine) */

inline facts(rpc, big, resend) {
	T_f_RPCError = rpc; T_f_TooLarge = big; T_f_Resending = resend
}

/* fire(ev): Engine.fire, under the engine's lock: the row, then what the
 * engine does on entering a terminal state, then the invariants. */
inline fire(ev) {
	task_fire(ev);
	if
	:: task_ok && ended == NONE && (task_st == T_S_completed || task_st == T_S_failed || task_st == T_S_cancelled) ->
		ended = task_st;
		ctxDone = true;  /* endLocked: t.cancel(): the server gets notifications/cancelled (T4) */
		asking = false;  /* its input requests closed */
		/* T3: completed holds a result the server gave. */
		assert(task_st != T_S_completed || gotResult);
		/* T5: a failure mcpkeep makes says why (rpc_error keeps the server's error). */
		assert(task_st != T_S_failed || task_reason || task_guard == T_K_rpc_error);
		if
		:: task_st == T_S_failed && ev == T_E_lost -> unknownSaid = true
		:: else -> skip
		fi
	:: !task_ok ->
		drops++;
#ifdef STRICT
		assert(task_ok);
#endif
		skip
	:: else -> skip
	fi;
	/* T1: a terminal state is never left. */
	assert(ended == NONE || task_st == ended);
	task_clear(); task_reason = 0;
	facts(0, 0, 0)
}

proctype Runner() {
send:
	atomic {
		/* T2: a call that is not replay-safe is never sent twice; a
		 * replay-safe one at most twice; none after "not sent again". */
		assert(sends == 0 || hinted);
		assert(sends < 2);
		assert(!unknownSaid);
		sends++;
		printf("EV call: sent on gen %d (send %d)\n", gen, sends)
	}
	if
	:: atomic { printf("EV server: a tool result\n"); gotResult = true; facts(0, 0, 0); fire(T_E_returned) }
	:: atomic { printf("EV server: a tool result too large to keep\n"); facts(0, 1, 0); fire(T_E_returned) }
	:: atomic { printf("EV server: a JSON-RPC error\n"); facts(1, 0, 0); fire(T_E_returned) }
	:: atomic { ctxDone -> printf("EV call: returns the context's error\n"); facts(1, 0, 0); fire(T_E_returned) }
	:: printf("EV server: hangs; never answers\n");
		/* only the task's end (cancel, TTL, dispose) returns the call */
		atomic { ctxDone -> printf("EV call: returns the context's error\n"); facts(1, 0, 0); fire(T_E_returned) }
	:: losses < MAXLOSS ->
		atomic {
			losses++; gen++;
			printf("EV server: lost with the call unanswered; gen %d next\n", gen);
			if
			:: !ctxDone && hinted && !replayed ->
				/* mayReplay: noticeReplay (Hooks.Resending), then the resend. */
				replayed = true;
				facts(0, 0, 1); fire(T_E_lost)
			:: else ->
				printf("EV call: returns the loss\n");
				facts(0, 0, 0); fire(T_E_lost);
				goto done
			fi
		}
		/* holdForReplay until the next generation; the task may end
		 * meanwhile: Call returns the loss (notReplayed wraps it). */
		if
		:: atomic { ctxDone -> printf("EV call: context ended during the replay; returns the loss\n"); facts(0, 0, 0); fire(T_E_lost) }
		:: atomic { !ctxDone -> goto send }
#ifdef SENDCANCELLED
		/* What if holdForReplay's select takes the lost generation's end
		 * over the task's and the transport wrote a request on a done
		 * context? The go-sdk's ioConn.Write refuses one (v1.8.0), so this
		 * is off; on, SPIN shows a call sent after "not sent again". */
		:: atomic { ctxDone -> printf("EV call: the replay goes out with the task's context ended\n"); goto send }
#endif
		fi
	fi;
done:
	atomic {
		ranDone = true;
		/* finish fired: the task is over once its call returned. */
		assert(!LIVE_TASK)
	}
}

/* Asker: the server asks the host once inside the call (Hooks.Ask). */
proctype Asker() {
	bool working;
	if
	:: skip
	:: goto done
	fi;
end_ask: /* the call may return before the server asks */
	atomic {
		sends > 0 && !ranDone ->
		if
		:: !LIVE_TASK -> goto done /* Ask refuses a finished task */
		:: else -> asking = true; working = (task_st == T_S_working);
			printf("EV server: asks the host\n")
		fi
	}
	if
	:: atomic { working -> facts(0, 0, 0); fire(T_E_input_requested) }
	:: else -> skip
	fi;
done:
	skip
}

/* Host: tasks/update (once the question is open), tasks/cancel, and
 * tasks/get after the TTL; each at most once, any of them never. */
proctype Host() {
	bool answer, cancel, poll;
	/* A host that never cancels (or never answers) is one run: fairness
	 * must not force its hand. */
	if :: cancel = true :: skip fi;
	if :: answer = true :: skip fi;
end_host:
	do
	:: atomic { !answer && asking && task_st == T_S_input_required ->
		answer = true; asking = false; hostAnswered = true;
		printf("EV host: tasks/update answers\n") }
		atomic { facts(0, 0, 0); fire(T_E_input_answered) }
	:: atomic { !cancel -> cancel = true; printf("EV host: tasks/cancel\n") }
		if
		:: atomic { LIVE_TASK -> fire(T_E_cancel) }
		:: atomic { !LIVE_TASK -> skip } /* Cancel finds it kept: the internal row */
		fi
	:: atomic { !poll && ttlPassed && LIVE_TASK -> poll = true; printf("EV host: tasks/get past the TTL\n") }
		atomic { fire(T_E_expired) }
	od
}

/* TTL: the clock passes the TTL any time; the timer's func finds the task
 * live (and fires Expired) or ended (stopped, or nothing live). */
proctype TTL() {
	atomic { ttlPassed = true; printf("EV clock: the TTL passes\n") }
	if
	:: atomic { LIVE_TASK -> printf("EV timer: expire finds the task live\n") }
		atomic { fire(T_E_expired) }
	:: atomic { !LIVE_TASK -> skip }
	fi
}

/* Disposer: Engine.Close (or not): the live tasks fail, then it waits
 * for their runs. */
proctype Disposer() {
	bool sawLive;
	if
	:: skip
	:: goto end_done
	fi;
	atomic { closed = true; sawLive = LIVE_TASK; printf("EV engine: Close\n") }
	if
	:: atomic { sawLive -> fire(T_E_dispose) }
	:: else -> skip
	fi;
	ranDone; /* wg.Wait */
end_done:
	skip
}

proctype Watchdog() {
end_watch:
	timeout -> assert(!LIVE_TASK && ranDone) /* no deadlock: the task ended, its run returned */
}

init {
	atomic {
		if :: hinted = true :: hinted = false fi;
		printf("EV task: created (replay-safe %d)\n", hinted);
		run Runner(); run Asker(); run Host(); run TTL(); run Disposer(); run Watchdog()
	}
}

#ifdef LIVE
/* Every task ends, and its call returns. */
ltl ends { <> (!LIVE_TASK && ranDone) }
#endif
