/* Code generated from tasks.Table by internal/cmd/modelgen; DO NOT EDIT. */

/* States (tasks.States). */
#define T_S_working 0
#define T_S_input_required 1
#define T_S_completed 2
#define T_S_failed 3
#define T_S_cancelled 4
#define T_S_INITIAL T_S_working

/* Events (tasks.Events). */
#define T_E_returned 0
#define T_E_lost 1
#define T_E_input_requested 2
#define T_E_input_answered 3
#define T_E_cancel 4
#define T_E_expired 5
#define T_E_dispose 6

/* Guard keys (tasks.Guards; always is the absent guard). */
#define T_K_always 0
#define T_K_answered 1
#define T_K_oversized 2
#define T_K_rpc_error 3
#define T_K_replayable 4
#define T_K_outcome_unknown 5

/* Facts the guards read (tasks.Facts); the model sets them per message. */
bool T_f_RPCError;
bool T_f_TooLarge;
bool T_f_Resending;

/* Guards: each Guard.Holds tabulated over every Facts value. */
#define T_G_answered ((!T_f_RPCError && !T_f_TooLarge))
#define T_G_oversized ((!T_f_RPCError && T_f_TooLarge))
#define T_G_rpc_error ((T_f_RPCError))
#define T_G_replayable ((T_f_Resending))
#define T_G_outcome_unknown ((!T_f_Resending))
#define T_G_always (1)

/* The machine: its state, and the row the last task_fire took. */
#define T_NO_ROW 255
#define T_NROWS 24
byte task_st = T_S_INITIAL;
byte task_row = T_NO_ROW;
byte task_guard;
byte task_to;
bool task_ok;
/* The row sets a message: a failure mcpkeep makes says why (T5). */
bool task_reason;

/* task_fire(ev): Machine.Fire. The row of (task_st, ev) whose guard holds is
 * taken (task_ok, task_row, task_guard set); none is the drop (task_ok false,
 * nothing changes); two is ErrAmbiguous, an assertion. */
inline task_fire(ev) {
	task_row = T_NO_ROW;
	if
	:: (task_st == T_S_working && ev == T_E_returned && T_G_answered) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 0; task_to = T_S_completed; task_guard = T_K_answered; task_reason = 0;
		printf("EV   row 0: working -returned[answered]-> completed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_working && ev == T_E_returned && T_G_oversized) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 1; task_to = T_S_failed; task_guard = T_K_oversized; task_reason = 1;
		printf("EV   row 1: working -returned[oversized]-> failed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_working && ev == T_E_returned && T_G_rpc_error) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 2; task_to = T_S_failed; task_guard = T_K_rpc_error; task_reason = 0;
		printf("EV   row 2: working -returned[rpc_error]-> failed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_working && ev == T_E_lost && T_G_replayable) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 3; task_to = T_S_working; task_guard = T_K_replayable; task_reason = 1;
		printf("EV   row 3: working -lost[replayable]-> working\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_working && ev == T_E_lost && T_G_outcome_unknown) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 4; task_to = T_S_failed; task_guard = T_K_outcome_unknown; task_reason = 1;
		printf("EV   row 4: working -lost[outcome_unknown]-> failed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_working && ev == T_E_input_requested && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 5; task_to = T_S_input_required; task_guard = T_K_always; task_reason = 0;
		printf("EV   row 5: working -input_requested[always]-> input_required\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_working && ev == T_E_cancel && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 6; task_to = T_S_cancelled; task_guard = T_K_always; task_reason = 0;
		printf("EV   row 6: working -cancel[always]-> cancelled\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_working && ev == T_E_expired && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 7; task_to = T_S_failed; task_guard = T_K_always; task_reason = 1;
		printf("EV   row 7: working -expired[always]-> failed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_working && ev == T_E_dispose && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 8; task_to = T_S_failed; task_guard = T_K_always; task_reason = 1;
		printf("EV   row 8: working -dispose[always]-> failed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_input_required && ev == T_E_input_answered && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 9; task_to = T_S_working; task_guard = T_K_always; task_reason = 0;
		printf("EV   row 9: input_required -input_answered[always]-> working\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_input_required && ev == T_E_returned && T_G_answered) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 10; task_to = T_S_completed; task_guard = T_K_answered; task_reason = 0;
		printf("EV   row 10: input_required -returned[answered]-> completed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_input_required && ev == T_E_returned && T_G_oversized) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 11; task_to = T_S_failed; task_guard = T_K_oversized; task_reason = 1;
		printf("EV   row 11: input_required -returned[oversized]-> failed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_input_required && ev == T_E_returned && T_G_rpc_error) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 12; task_to = T_S_failed; task_guard = T_K_rpc_error; task_reason = 0;
		printf("EV   row 12: input_required -returned[rpc_error]-> failed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_input_required && ev == T_E_lost && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 13; task_to = T_S_failed; task_guard = T_K_always; task_reason = 1;
		printf("EV   row 13: input_required -lost[always]-> failed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_input_required && ev == T_E_cancel && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 14; task_to = T_S_cancelled; task_guard = T_K_always; task_reason = 0;
		printf("EV   row 14: input_required -cancel[always]-> cancelled\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_input_required && ev == T_E_expired && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 15; task_to = T_S_failed; task_guard = T_K_always; task_reason = 1;
		printf("EV   row 15: input_required -expired[always]-> failed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_input_required && ev == T_E_dispose && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 16; task_to = T_S_failed; task_guard = T_K_always; task_reason = 1;
		printf("EV   row 16: input_required -dispose[always]-> failed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_completed && ev == T_E_cancel && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 17; task_to = T_S_completed; task_guard = T_K_always; task_reason = 0;
		printf("EV   row 17: completed -cancel[always]-> completed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_failed && ev == T_E_cancel && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 18; task_to = T_S_failed; task_guard = T_K_always; task_reason = 0;
		printf("EV   row 18: failed -cancel[always]-> failed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_cancelled && ev == T_E_cancel && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 19; task_to = T_S_cancelled; task_guard = T_K_always; task_reason = 0;
		printf("EV   row 19: cancelled -cancel[always]-> cancelled\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_cancelled && ev == T_E_returned && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 20; task_to = T_S_cancelled; task_guard = T_K_always; task_reason = 0;
		printf("EV   row 20: cancelled -returned[always]-> cancelled\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_cancelled && ev == T_E_lost && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 21; task_to = T_S_cancelled; task_guard = T_K_always; task_reason = 0;
		printf("EV   row 21: cancelled -lost[always]-> cancelled\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_failed && ev == T_E_returned && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 22; task_to = T_S_failed; task_guard = T_K_always; task_reason = 0;
		printf("EV   row 22: failed -returned[always]-> failed\n")
	:: else -> skip
	fi;
	if
	:: (task_st == T_S_failed && ev == T_E_lost && T_G_always) ->
		assert(task_row == T_NO_ROW); /* ErrAmbiguous */
		task_row = 23; task_to = T_S_failed; task_guard = T_K_always; task_reason = 0;
		printf("EV   row 23: failed -lost[always]-> failed\n")
	:: else -> skip
	fi;
	if
	:: task_row != T_NO_ROW -> task_st = task_to; task_ok = true
	:: else -> task_ok = false; task_print_drop(ev)
	fi;
	task_to = 0
}

/* task_clear: forget the last row once its handler is done (fewer states). */
inline task_clear() {
	task_row = T_NO_ROW; task_guard = 0; task_ok = false
}

/* task_print_drop(ev): the drop, for the trail. */
inline task_print_drop(ev) {
	if
	:: ev == T_E_returned -> printf("EV   drop: returned in state ")
	:: ev == T_E_lost -> printf("EV   drop: lost in state ")
	:: ev == T_E_input_requested -> printf("EV   drop: input_requested in state ")
	:: ev == T_E_input_answered -> printf("EV   drop: input_answered in state ")
	:: ev == T_E_cancel -> printf("EV   drop: cancel in state ")
	:: ev == T_E_expired -> printf("EV   drop: expired in state ")
	:: ev == T_E_dispose -> printf("EV   drop: dispose in state ")
	:: else -> skip
	fi;
	task_print_state(task_st);
	printf("\n")
}

/* task_print_state(s): a state's name, for the trail. */
inline task_print_state(s) {
	if
	:: s == T_S_working -> printf("working")
	:: s == T_S_input_required -> printf("input_required")
	:: s == T_S_completed -> printf("completed")
	:: s == T_S_failed -> printf("failed")
	:: s == T_S_cancelled -> printf("cancelled")
	:: else -> skip
	fi
}
