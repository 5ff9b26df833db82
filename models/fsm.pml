/* Code generated from fsm.Table by internal/cmd/modelgen; DO NOT EDIT. */

/* States (fsm.States). */
#define S_connecting 0
#define S_established 1
#define S_lost 2
#define S_backing_off 3
#define S_exhausted 4
#define S_draining 5
#define S_disposed 6
#define S_idle 7
#define S_INITIAL S_connecting

/* Events (fsm.Events). */
#define E_connected 0
#define E_failed 1
#define E_tools_changed 2
#define E_dispose 3
#define E_closed 4
#define E_stable 5
#define E_reconnect 6
#define E_released 7
#define E_stuck 8
#define E_retry_due 9
#define E_drained 10
#define E_drain_timeout 11
#define E_catalog_changed 12
#define E_demand 13
#define E_idle_timeout 14

/* Guard keys (fsm.Guards; always is the absent guard). */
#define K_always 0
#define K_gen_current 1
#define K_first_failure 2
#define K_timer_current 3
#define K_budget_left 4
#define K_budget_spent 5
#define K_sign_in 6
#define K_reconnect_off 7
#define K_quiet 8
#define K_idle_stop 9

/* Facts the guards read (fsm.Facts); the model sets them per message. */
bool f_Stale;
bool f_Repeated;
bool f_ReconnectDisabled;
bool f_BudgetSpent;
bool f_SignInRequired;
bool f_Busy;
bool f_IdleStop;
bool f_CallsOpen;

/* Guards: each Guard.Holds tabulated over every Facts value. */
#define G_gen_current ((!f_Stale))
#define G_first_failure ((!f_Stale && !f_Repeated))
#define G_timer_current ((!f_Stale))
#define G_budget_left ((!f_ReconnectDisabled && !f_BudgetSpent && !f_SignInRequired && !f_IdleStop))
#define G_budget_spent ((!f_ReconnectDisabled && f_BudgetSpent && !f_SignInRequired && !f_IdleStop))
#define G_sign_in ((!f_ReconnectDisabled && f_SignInRequired && !f_IdleStop))
#define G_reconnect_off ((f_ReconnectDisabled && !f_IdleStop))
#define G_quiet ((!f_Stale && !f_Busy && !f_CallsOpen))
#define G_idle_stop ((f_IdleStop))
#define G_always (1)

/* The machine: its state, and the row the last fsm_fire took. */
#define NO_ROW 255
#define NROWS 29
byte fsm_st = S_INITIAL;
byte fsm_row = NO_ROW;
byte fsm_guard;
byte fsm_to;
bool fsm_ok;

/* fsm_fire(ev): Machine.Fire. The row of (fsm_st, ev) whose guard holds is
 * taken (fsm_ok, fsm_row, fsm_guard set); none is the drop (fsm_ok false,
 * nothing changes); two is ErrAmbiguous, an assertion. */
inline fsm_fire(ev) {
	fsm_row = NO_ROW;
	if
	:: (fsm_st == S_connecting && ev == E_connected && G_gen_current) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 0; fsm_to = S_established; fsm_guard = K_gen_current;
		printf("EV   row 0: connecting -connected[gen_current]-> established\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_connecting && ev == E_failed && G_first_failure) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 1; fsm_to = S_lost; fsm_guard = K_first_failure;
		printf("EV   row 1: connecting -failed[first_failure]-> lost\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_connecting && ev == E_tools_changed && G_gen_current) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 2; fsm_to = S_connecting; fsm_guard = K_gen_current;
		printf("EV   row 2: connecting -tools_changed[gen_current]-> connecting\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_connecting && ev == E_catalog_changed && G_gen_current) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 3; fsm_to = S_connecting; fsm_guard = K_gen_current;
		printf("EV   row 3: connecting -catalog_changed[gen_current]-> connecting\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_connecting && ev == E_dispose && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 4; fsm_to = S_draining; fsm_guard = K_always;
		printf("EV   row 4: connecting -dispose[always]-> draining\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_established && ev == E_closed && G_gen_current) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 5; fsm_to = S_lost; fsm_guard = K_gen_current;
		printf("EV   row 5: established -closed[gen_current]-> lost\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_established && ev == E_stable && G_gen_current) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 6; fsm_to = S_established; fsm_guard = K_gen_current;
		printf("EV   row 6: established -stable[gen_current]-> established\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_established && ev == E_tools_changed && G_gen_current) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 7; fsm_to = S_established; fsm_guard = K_gen_current;
		printf("EV   row 7: established -tools_changed[gen_current]-> established\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_established && ev == E_catalog_changed && G_gen_current) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 8; fsm_to = S_established; fsm_guard = K_gen_current;
		printf("EV   row 8: established -catalog_changed[gen_current]-> established\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_established && ev == E_idle_timeout && G_quiet) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 9; fsm_to = S_lost; fsm_guard = K_quiet;
		printf("EV   row 9: established -idle_timeout[quiet]-> lost\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_established && ev == E_reconnect && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 10; fsm_to = S_lost; fsm_guard = K_always;
		printf("EV   row 10: established -reconnect[always]-> lost\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_established && ev == E_dispose && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 11; fsm_to = S_draining; fsm_guard = K_always;
		printf("EV   row 11: established -dispose[always]-> draining\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_lost && ev == E_released && G_budget_left) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 12; fsm_to = S_backing_off; fsm_guard = K_budget_left;
		printf("EV   row 12: lost -released[budget_left]-> backing-off\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_lost && ev == E_released && G_budget_spent) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 13; fsm_to = S_exhausted; fsm_guard = K_budget_spent;
		printf("EV   row 13: lost -released[budget_spent]-> exhausted\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_lost && ev == E_released && G_sign_in) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 14; fsm_to = S_exhausted; fsm_guard = K_sign_in;
		printf("EV   row 14: lost -released[sign_in]-> exhausted\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_lost && ev == E_released && G_reconnect_off) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 15; fsm_to = S_exhausted; fsm_guard = K_reconnect_off;
		printf("EV   row 15: lost -released[reconnect_off]-> exhausted\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_lost && ev == E_released && G_idle_stop) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 16; fsm_to = S_idle; fsm_guard = K_idle_stop;
		printf("EV   row 16: lost -released[idle_stop]-> idle\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_lost && ev == E_stuck && G_gen_current) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 17; fsm_to = S_exhausted; fsm_guard = K_gen_current;
		printf("EV   row 17: lost -stuck[gen_current]-> exhausted\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_lost && ev == E_dispose && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 18; fsm_to = S_draining; fsm_guard = K_always;
		printf("EV   row 18: lost -dispose[always]-> draining\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_backing_off && ev == E_retry_due && G_timer_current) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 19; fsm_to = S_connecting; fsm_guard = K_timer_current;
		printf("EV   row 19: backing-off -retry_due[timer_current]-> connecting\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_backing_off && ev == E_reconnect && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 20; fsm_to = S_connecting; fsm_guard = K_always;
		printf("EV   row 20: backing-off -reconnect[always]-> connecting\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_backing_off && ev == E_dispose && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 21; fsm_to = S_draining; fsm_guard = K_always;
		printf("EV   row 21: backing-off -dispose[always]-> draining\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_exhausted && ev == E_reconnect && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 22; fsm_to = S_connecting; fsm_guard = K_always;
		printf("EV   row 22: exhausted -reconnect[always]-> connecting\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_exhausted && ev == E_dispose && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 23; fsm_to = S_draining; fsm_guard = K_always;
		printf("EV   row 23: exhausted -dispose[always]-> draining\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_idle && ev == E_demand && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 24; fsm_to = S_connecting; fsm_guard = K_always;
		printf("EV   row 24: idle -demand[always]-> connecting\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_idle && ev == E_reconnect && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 25; fsm_to = S_connecting; fsm_guard = K_always;
		printf("EV   row 25: idle -reconnect[always]-> connecting\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_idle && ev == E_dispose && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 26; fsm_to = S_draining; fsm_guard = K_always;
		printf("EV   row 26: idle -dispose[always]-> draining\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_draining && ev == E_drained && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 27; fsm_to = S_disposed; fsm_guard = K_always;
		printf("EV   row 27: draining -drained[always]-> disposed\n")
	:: else -> skip
	fi;
	if
	:: (fsm_st == S_draining && ev == E_drain_timeout && G_always) ->
		assert(fsm_row == NO_ROW); /* ErrAmbiguous */
		fsm_row = 28; fsm_to = S_disposed; fsm_guard = K_always;
		printf("EV   row 28: draining -drain_timeout[always]-> disposed\n")
	:: else -> skip
	fi;
	if
	:: fsm_row != NO_ROW -> fsm_st = fsm_to; fsm_ok = true
	:: else -> fsm_ok = false; fsm_print_drop(ev)
	fi;
	fsm_to = 0
}

/* fsm_clear: forget the last row once its handler is done (fewer states). */
inline fsm_clear() {
	fsm_row = NO_ROW; fsm_guard = 0; fsm_ok = false
}

/* fsm_print_drop(ev): the drop, for the trail. */
inline fsm_print_drop(ev) {
	if
	:: ev == E_connected -> printf("EV   drop: connected in state ")
	:: ev == E_failed -> printf("EV   drop: failed in state ")
	:: ev == E_tools_changed -> printf("EV   drop: tools_changed in state ")
	:: ev == E_dispose -> printf("EV   drop: dispose in state ")
	:: ev == E_closed -> printf("EV   drop: closed in state ")
	:: ev == E_stable -> printf("EV   drop: stable in state ")
	:: ev == E_reconnect -> printf("EV   drop: reconnect in state ")
	:: ev == E_released -> printf("EV   drop: released in state ")
	:: ev == E_stuck -> printf("EV   drop: stuck in state ")
	:: ev == E_retry_due -> printf("EV   drop: retry_due in state ")
	:: ev == E_drained -> printf("EV   drop: drained in state ")
	:: ev == E_drain_timeout -> printf("EV   drop: drain_timeout in state ")
	:: ev == E_catalog_changed -> printf("EV   drop: catalog_changed in state ")
	:: ev == E_demand -> printf("EV   drop: demand in state ")
	:: ev == E_idle_timeout -> printf("EV   drop: idle_timeout in state ")
	:: else -> skip
	fi;
	fsm_print_state(fsm_st);
	printf("\n")
}

/* fsm_print_state(s): a state's name, for the trail. */
inline fsm_print_state(s) {
	if
	:: s == S_connecting -> printf("connecting")
	:: s == S_established -> printf("established")
	:: s == S_lost -> printf("lost")
	:: s == S_backing_off -> printf("backing-off")
	:: s == S_exhausted -> printf("exhausted")
	:: s == S_draining -> printf("draining")
	:: s == S_disposed -> printf("disposed")
	:: s == S_idle -> printf("idle")
	:: else -> skip
	fi
}
