"""Three airline-support trajectories written for these tests in the shape of
the τ-bench airline file (``{"task_id", "traj": [Chat Completions messages]}``),
so the rule tests never depend on data outside the repository. They hold
what the real file holds — a long policy system prompt, plain turns,
single calls whose results are JSON or ``Error: …`` text, write calls that
fail and are retried, a hand-off that ends the run on a tool result, a call
id reused by a later assistant message — plus what it lacks: parallel calls.
Nothing here is copied from the real file."""

from __future__ import annotations

import json

POLICY = (
    "# Airline Agent Policy\n\nThe current time is 2026-03-02 10:00:00 UTC.\n\n"
    "You help users book, modify or cancel flight reservations. Before any action that changes a booking, "
    "list the details and obtain explicit confirmation (yes) from the user. Do not make up information. "
    "Make at most one tool call at a time unless the calls are independent lookups. "
    "Basic economy flights cannot be modified. Cancellation is allowed within 24 hours of booking, when the "
    "airline cancelled the flight, or with travel insurance. Certificates are compensation only for members "
    "whose flights were delayed and who ask for it. Transfer to a human agent only when the request cannot be "
    "handled within this policy. "
)


def _call(cid, name, **args):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def _tool(cid, name, content):
    return {"role": "tool", "tool_call_id": cid, "name": name,
            "content": content if isinstance(content, str) else json.dumps(content)}


def _reservation(rid, user_id, flights, cabin="economy", status=None):
    body = {"reservation_id": rid, "user_id": user_id, "origin": "JFK", "destination": "SEA",
            "flight_type": "one_way", "cabin": cabin,
            "flights": [{"flight_number": f, "date": "2026-03-10", "price": 150 + 10 * n} for n, f in enumerate(flights)],
            "passengers": [{"first_name": "Ada", "last_name": "Okafor", "dob": "1990-04-02"}],
            "payment_history": [{"payment_id": "credit_card_11", "amount": 320}], "insurance": "no"}
    if status:
        body["status"] = status
    return body


BOOKING = {
    "task_id": 901, "trial": 0,
    "traj": [
        {"role": "system", "content": POLICY},
        {"role": "user", "content": "Hi, I want to book a one-way flight from New York to Seattle on March 10."},
        {"role": "assistant", "content": "Sure. Could you give me your user id?"},
        {"role": "user", "content": "It is ada_okafor_1201. Economy, one passenger, pay with my credit card."},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_u1", "get_user_details", user_id="ada_okafor_1201")]},
        _tool("call_u1", "get_user_details", {"name": {"first_name": "Ada", "last_name": "Okafor"},
                                              "payment_methods": {"credit_card_11": {"source": "credit_card"}},
                                              "membership": "gold", "reservations": ["Q7K2LM"]}),
        {"role": "assistant", "content": None, "tool_calls": [_call("call_s1", "search_direct_flight", origin="JFK", destination="SEA", date="2026-03-10")]},
        _tool("call_s1", "search_direct_flight", [{"flight_number": f"HAT{n:03d}", "origin": "JFK", "destination": "SEA",
                                                  "scheduled_departure_time_est": f"{6 + n}:00:00", "status": "available",
                                                  "available_seats": {"economy": 9 - n}, "prices": {"economy": 150 + 10 * n}}
                                                 for n in range(6)]),
        {"role": "assistant", "content": "There are direct flights. Do you also want to see connections?"},
        {"role": "user", "content": "Yes, show me one-stop options too, and remind me what my existing reservation is."},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_s3", "search_onestop_flight", origin="JFK", destination="SEA", date="2026-03-10")]},
        _tool("call_s3", "search_onestop_flight", [[{"flight_number": f"HAT{100 + n:03d}", "origin": "JFK", "destination": "ORD",
                                                    "prices": {"economy": 80 + n}},
                                                   {"flight_number": f"HAT{200 + n:03d}", "origin": "ORD", "destination": "SEA",
                                                    "prices": {"economy": 90 + n}}] for n in range(8)]),
        {"role": "assistant", "content": None, "tool_calls": [_call("call_r0", "get_reservation_details", reservation_id="Q7K2LM")]},
        _tool("call_r0", "get_reservation_details", _reservation("Q7K2LM", "ada_okafor_1201", ["HAT031", "HAT120"])),
        {"role": "assistant", "content": None, "tool_calls": [_call("call_k1", "calculate", expression="150 - 80 - 90")]},
        _tool("call_k1", "calculate", "-20.0"),
        {"role": "assistant", "content": "Your existing reservation Q7K2LM is JFK to SEA on HAT031 and HAT120. "
                                         "The connections cost more than the direct HAT000, which departs at 06:00 "
                                         "for 150 USD. Shall I book HAT000?"},
        {"role": "user", "content": "Yes, book HAT000 please."},
        {"role": "assistant", "content": None, "tool_calls": [_call(
            "call_b1", "book_reservation", user_id="ada_okafor_1201", origin="JFK", destination="SEA",
            flight_type="one_way", cabin="economy", flights=[{"flight_number": "HAT000", "date": "2026-03-10"}],
            payment_methods=[{"payment_id": "credit_card_11", "amount": 120}])]},
        _tool("call_b1", "book_reservation", "Error: payment amount does not add up, total price is 150, but paid 120"),
        {"role": "assistant", "content": None, "tool_calls": [_call(
            "call_b2", "book_reservation", user_id="ada_okafor_1201", origin="JFK", destination="SEA",
            flight_type="one_way", cabin="economy", flights=[{"flight_number": "HAT000", "date": "2026-03-10"}],
            payment_methods=[{"payment_id": "credit_card_11", "amount": 150}])]},
        _tool("call_b2", "book_reservation", _reservation("HATBK1", "ada_okafor_1201", ["HAT000"])),
        {"role": "assistant", "content": "Booked: reservation HATBK1 on HAT000, 150 USD charged to credit_card_11."},
        {"role": "user", "content": "Great, thank you!"},
        {"role": "assistant", "content": "You're welcome. Have a good flight."},
    ],
}

CHANGE = {
    "task_id": 902, "trial": 0,
    "traj": [
        {"role": "system", "content": POLICY},
        {"role": "user", "content": "I need to move reservation Q7K2LM to an earlier flight on the same day."},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_r1", "get_reservation_details", reservation_id="Q7K2LM")]},
        _tool("call_r1", "get_reservation_details", _reservation("Q7K2LM", "ada_okafor_1201", ["HAT031", "HAT120"])),
        {"role": "assistant", "content": None, "tool_calls": [_call("call_s2", "search_direct_flight", origin="JFK", destination="SEA", date="2026-03-10")]},
        _tool("call_s2", "search_direct_flight", [{"flight_number": "HAT007", "status": "available", "available_seats": {"economy": 0}},
                                                 {"flight_number": "HAT009", "status": "available", "available_seats": {"economy": 4}}]),
        {"role": "assistant", "content": "HAT009 leaves earlier and has seats. Change to HAT009, paying any difference with credit_card_11?"},
        {"role": "user", "content": "Yes."},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_x1", "update_reservation_flights", reservation_id="Q7K2LM", cabin="economy",
                                                                     flights=[{"flight_number": "HAT007", "date": "2026-03-10"}], payment_id="credit_card_11")]},
        _tool("call_x1", "update_reservation_flights", "Error: not enough seats on flight HAT007"),
        # The real file has later assistant messages reuse an earlier call id; so does this one.
        {"role": "assistant", "content": None, "tool_calls": [_call("call_r1", "update_reservation_flights", reservation_id="Q7K2LM", cabin="economy",
                                                                     flights=[{"flight_number": "HAT009", "date": "2026-03-10"}], payment_id="credit_card_11")]},
        _tool("call_r1", "update_reservation_flights", _reservation("Q7K2LM", "ada_okafor_1201", ["HAT009"])),
        {"role": "user", "content": "Also change the passenger name to my colleague, Ben Ito."},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_h1", "transfer_to_human_agents",
                                                                     summary="User wants to change the passenger on Q7K2LM to another person.")]},
        _tool("call_h1", "transfer_to_human_agents", "Transfer successful"),
    ],
}

CANCEL = {
    "task_id": 903, "trial": 1,
    "traj": [
        {"role": "system", "content": POLICY},
        {"role": "user", "content": "My flight was cancelled by the airline. Please cancel reservations ZP4Q1C and ZP4Q1D and refund me."},
        {"role": "assistant", "content": "I'm sorry to hear that. Let me look at both reservations."},
        {"role": "assistant", "content": None, "tool_calls": [
            _call("call_p1", "get_reservation_details", reservation_id="ZP4Q1C"),
            _call("call_p2", "get_reservation_details", reservation_id="ZP4Q1D")]},
        _tool("call_p2", "get_reservation_details", _reservation("ZP4Q1D", "ben_ito_77", ["HAT300"], status="cancelled_by_airline")),
        _tool("call_p1", "get_reservation_details", _reservation("ZP4Q1C", "ben_ito_77", ["HAT301"], cabin="basic_economy")),
        {"role": "assistant", "content": "ZP4Q1D was cancelled by the airline, so I can cancel it with a full refund. "
                                         "ZP4Q1C was not; as basic economy without insurance it cannot be cancelled. Cancel ZP4Q1D?"},
        {"role": "user", "content": "Fine, cancel ZP4Q1D. And I was delayed last week too, can I get compensation?"},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_c1", "cancel_reservation", reservation_id="ZP4Q1D")]},
        _tool("call_c1", "cancel_reservation", _reservation("ZP4Q1D", "ben_ito_77", ["HAT300"], status="cancelled")),
        {"role": "assistant", "content": None, "tool_calls": [_call("call_u2", "get_user_details", user_id="ben_ito_77")]},
        _tool("call_u2", "get_user_details", {"membership": "silver", "reservations": ["ZP4Q1C"]}),
        {"role": "assistant", "content": "As a silver member with a delay you can receive a 50 USD certificate. Shall I send it?"},
        {"role": "user", "content": "Yes please."},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_g1", "send_certificate", user_id="ben_ito_77", amount=50)]},
        _tool("call_g1", "send_certificate", "Certificate certificate_5501 added to user ben_ito_77 with amount 50."),
        {"role": "assistant", "content": "Done: ZP4Q1D is cancelled and refunded, and a 50 USD certificate was sent."},
        {"role": "user", "content": "Thanks, that's all."},
    ],
}

TRAJECTORIES = [BOOKING, CHANGE, CANCEL]
# What a reader of these trajectories counts as a write (book, update,
# cancel, send, transfer): the default verbs must find exactly these.
SIDE_EFFECT_CALLS = {
    901: [(18, "call_b1"), (20, "call_b2")],
    902: [(8, "call_x1"), (10, "call_r1"), (13, "call_h1")],
    903: [(8, "call_c1"), (14, "call_g1")],
}
