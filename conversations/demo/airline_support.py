"""Airline customer support — an English conversation with tool calls.

A frequent flyer manages several bookings with a support agent that looks
things up through tools (reservation lookup, flight status, seat map, fare
rules). Runs with tool calls keep the call and the tool result; only the
final answer enters the pair. One run fails mid-way (the booking system
timed out), the customer withdraws a refund request ("forget what I said
about the refund") and corrects a passenger's date of birth.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from .builder import Call, Conversation, ask, clarify, failed, note, tool

# Booking code, route, flight, date, departure, cabin, passengers, seat(s), fare paid (USD), bags.
BOOKINGS = [
    ("K7QZ2M", "BOS-SFO", "NA 218", "2026-12-04", "07:05", "economy", ["Dana Whitfield"], ["23C"], 412.60, 1),
    ("H3LW9P", "SFO-SEA", "NA 1472", "2026-12-06", "18:40", "economy", ["Dana Whitfield"], ["14A"], 139.00, 0),
    ("R8TN4X", "BOS-MCO", "NA 902", "2026-12-20", "09:15", "economy", ["Dana Whitfield", "Eli Whitfield", "Maya Whitfield"], ["31D", "31E", "31F"], 1187.40, 2),
    ("R8TN4Y", "MCO-BOS", "NA 907", "2026-12-27", "16:50", "economy", ["Dana Whitfield", "Eli Whitfield", "Maya Whitfield"], ["28A", "28B", "28C"], 1043.10, 2),
    ("P2VD7K", "BOS-LHR", "NA 94", "2027-01-15", "21:30", "business", ["Dana Whitfield"], ["4K"], 3890.00, 2),
    ("P2VD7L", "LHR-BOS", "NA 95", "2027-01-22", "11:10", "business", ["Dana Whitfield"], ["5A"], 3615.00, 2),
]

STATUS = {
    "NA 218": ("on time", "B12", "06:25"),
    "NA 1472": ("delayed 35 minutes", "F3", "18:40 → 19:15"),
    "NA 902": ("on time", "C21", "08:35"),
    "NA 907": ("scheduled", "not assigned yet", "16:10"),
    "NA 94": ("scheduled", "E7", "20:35"),
    "NA 95": ("scheduled", "not assigned yet", "10:15"),
}


def _lookup(b):
    code, route, flight, date, dep, cabin, pax, seats, fare, bags = b
    result = {"reservation": code, "route": route, "flight": flight, "date": date, "departure": dep,
              "cabin": cabin, "passengers": pax, "seats": seats, "total_paid_usd": fare, "checked_bags": bags}
    users = [f"Can you pull up booking {code}?", f"What do I have on {code}?",
             f"Remind me what's on reservation {code}.", f"Check {code} for me please."]
    who = ", ".join(pax)
    return tool(
        users[BOOKINGS.index(b) % 4],
        [Call("get_reservation", {"reservation_id": code}, json.dumps(result))],
        f"Reservation {code}: {flight} {route} on {date}, departing {dep}, {cabin} cabin. "
        f"Passenger{'s' if len(pax) > 1 else ''}: {who}; seat{'s' if len(seats) > 1 else ''} {', '.join(seats)}. "
        f"Total paid ${fare:,.2f}, {bags} checked bag{'s' if bags != 1 else ''} included.",
    )


def _status(b):
    code, route, flight, date, *_ = b
    state, gate, boarding = STATUS[flight]
    users = [f"Is {flight} on {date} on time?", f"Any news on the {route} flight?", f"What's the gate for {flight}?"]
    return tool(
        users[BOOKINGS.index(b) % 3],
        [Call("get_flight_status", {"flight_number": flight, "date": date},
              json.dumps({"flight": flight, "date": date, "status": state, "gate": gate, "boarding": boarding}))],
        f"{flight} ({route}) on {date} is {state}. Gate: {gate}. Boarding: {boarding}. "
        + ("Gates are usually assigned about 24 hours before departure." if gate == "not assigned yet"
           else "I'll send a notification if anything changes."),
    )


def _fare_rules(b):
    code, route, flight, date, dep, cabin, pax, seats, fare, bags = b
    if cabin == "business":
        text = (f"{code} is a flexible business fare: changes are free, you only pay any fare difference, "
                f"and a cancellation refunds the full ${fare:,.2f} to the original card within 7–10 business days.")
    else:
        fee = 75 if fare < 500 else 99
        text = (f"{code} is a standard economy fare: changes cost ${fee} per passenger plus any fare difference; "
                f"cancelling gives a travel credit of ${fare - fee * len(pax):,.2f}, valid 12 months, not a cash refund.")
    users = [f"What happens if I change {code}?", f"If I cancel {code}, do I get money back?"]
    return tool(
        users[BOOKINGS.index(b) % 2],
        [Call("get_fare_rules", {"reservation_id": code}, json.dumps({"cabin": cabin, "flexible": cabin == "business"}))],
        text,
    )


def _bags(b):
    code, route, flight, date, dep, cabin, pax, seats, fare, bags = b
    allowance = 2 if cabin == "business" else 1
    users = [f"How many bags can we check on {code}?", f"Do I pay for bags on the {route} trip?"]
    extra = "" if cabin == "business" else " A second bag is $45 each way if you add it online, $60 at the airport."
    return ask(users[BOOKINGS.index(b) % 2],
               f"On {code} ({cabin}) each passenger can check {allowance} bag{'s' if allowance > 1 else ''} "
               f"up to {'32' if cabin == 'business' else '23'} kg, plus one carry-on and one personal item.{extra}")


OPENING = [
    note("You are a support agent for Northwind Air. Confirm details before changing a booking. "
         "Never promise refunds that the fare rules do not allow."),
    ask("Hi, I have a bunch of trips coming up and want to sort them out. My frequent flyer number is NW-4471-0926.",
        "Hello! I found the account for NW-4471-0926 under Dana Whitfield, Gold tier, 48,210 miles. "
        "You have six upcoming flights between December 4 and January 22. Which one shall we start with?"),
    tool("Let's start with the Boston to San Francisco one.",
         [Call("list_reservations", {"member": "NW-4471-0926", "route": "BOS-SFO"},
               json.dumps({"reservations": [{"id": "K7QZ2M", "date": "2026-12-04"}]}))],
         "That is reservation K7QZ2M, NA 218 on December 4 at 07:05 from Boston Logan to San Francisco, seat 23C."),
    ask("Can I get a window seat instead of 23C?",
        "Seat 23A is free and is a standard window seat at no charge. Do you want me to move you from 23C to 23A?"),
    tool("Yes, do it.",
         [Call("change_seat", {"reservation_id": "K7QZ2M", "passenger": "Dana Whitfield", "from": "23C", "to": "23A"},
               '{"ok": true, "seat": "23A"}')],
         "Done: on K7QZ2M you are now in 23A (window). Your boarding pass will update in the app within a few minutes."),
    ask("The December 6 Seattle flight, I might not need it anymore. I'd like a refund for that one.",
        "Understood. H3LW9P (SFO-SEA, December 6) is a standard economy fare, so a cancellation gives a travel credit "
        "rather than cash. Before I cancel anything, can you confirm you want to cancel H3LW9P?"),
    ask("Actually, forget what I said about the refund. I'm keeping the Seattle flight.",
        "No problem, I have not cancelled anything. H3LW9P stays as booked: NA 1472 on December 6 at 18:40, seat 14A."),
    failed("Can you add my son Eli to the Seattle flight too?",
           "Let me check availability on NA 1472 for one more passenger…",
           calls=(Call("add_passenger", {"reservation_id": "H3LW9P", "first_name": "Eli", "last_name": "Whitfield"},
                       '{"error": "upstream timeout after 30000 ms", "code": "RES_TIMEOUT"}'),)),
    ask("Hello? Did that go through?",
        "I'm sorry, the booking system timed out on my last request and nothing was changed: Eli is NOT on H3LW9P. "
        "I can try again now. Shall I add Eli Whitfield to NA 1472 on December 6?"),
    ask("No, leave it. He'll drive up with his friends.",
        "Okay, H3LW9P stays with one passenger, Dana Whitfield. No change made."),
]

MIDDLE = [
    ask("For the Orlando trip, Maya's date of birth is wrong on the booking.",
        "I can fix that. What should Maya Whitfield's date of birth be? It currently shows 2014-03-09."),
    ask("Sorry, I meant it should be 2013-09-03, the day and month were swapped. And the year is 2013, not 2014.",
        "Thanks for the correction. I'll set Maya Whitfield's date of birth to 2013-09-03 (replacing 2014-03-09) "
        "on both R8TN4X and R8TN4Y. Shall I go ahead?"),
    tool(user="Yes please.",
         calls=[Call("update_passenger", {"reservation_id": "R8TN4X", "passenger": "Maya Whitfield", "dob": "2013-09-03"},
               '{"ok": true}'),
          Call("update_passenger", {"reservation_id": "R8TN4Y", "passenger": "Maya Whitfield", "dob": "2013-09-03"},
               '{"ok": true}')],
         preface="Updating both Orlando reservations now.",
         answer="Updated: Maya Whitfield's date of birth is now 2013-09-03 on R8TN4X and R8TN4Y. No fee applies to a "
         "date-of-birth correction."),
    clarify("Can you move us to an earlier flight on the way back?",
            "Which way back do you mean: the Orlando return R8TN4Y on December 27, or the London return P2VD7L on "
            "January 22?"),
    ask("Orlando, the 27th.",
        "On December 27 there is NA 903 departing Orlando at 11:20, arriving Boston 14:12. The change fee is $99 per "
        "passenger plus a fare difference of $38 each, $411 in total for three people. Do you want it?"),
    ask("$411 is too much. Keep the 16:50 one.",
        "Understood, R8TN4Y stays on NA 907 at 16:50. No change and no charge."),
    ask("Can we sit together on the way to Orlando? The seats look split.",
        "They are already together: 31D, 31E and 31F are the three middle-section seats in one row on NA 902."),
    ask("Does the London flight have lie-flat seats?",
        "Yes. NA 94 and NA 95 are Boeing 787-9s with lie-flat business seats in a 1-2-1 layout; 4K and 5A are both "
        "window seats with direct aisle access."),
    ask("How many miles will I earn on London?",
        "Business class on BOS-LHR-BOS earns 150% of distance plus a 50% Gold bonus: about 6,590 miles each way, "
        "13,180 in total, posting within 72 hours after each flight."),
    ask("Can I use miles to upgrade the Orlando flights to premium?",
        "Premium upgrades on domestic routes cost 15,000 miles per passenger each way. For three passengers on both "
        "flights that's 90,000 miles; you have 48,210, so you could upgrade one direction for all three (45,000)."),
    ask("No, not worth it. Skip the upgrade.",
        "Okay, no upgrade. Your miles stay at 48,210."),
]

CLOSING = [
    ask("What time should we leave home for the Orlando flight?",
        "NA 902 departs at 09:15 and boarding starts at 08:35. With checked bags and holiday crowds at Logan "
        "Terminal B, plan to arrive by 07:15, so leave home around 06:30 if you're 30 minutes away."),
    ask("Is there lounge access for me in London?",
        "Yes: your business ticket on NA 95 includes the Northwind lounge in Heathrow Terminal 3, opening at 05:30. "
        "On the outbound NA 94 you can use the Boston lounge near gate E7 from 18:00."),
    ask("Can I bring my dog on the Seattle flight?",
        "A small dog can travel in the cabin on NA 1472 if the carrier fits under the seat (max 45 x 28 x 24 cm). The "
        "pet fee is $125 each way and only 2 pets are allowed per flight, so it must be booked in advance."),
    ask("Never mind the dog, my neighbor will keep him.",
        "Okay, no pet booking added."),
    ask("Give me a quick summary of everything we changed today.",
        "Today: 1) K7QZ2M seat changed from 23C to 23A; 2) H3LW9P kept, no cancellation and no refund (request "
        "withdrawn), Eli was not added after the system timeout; 3) Maya's date of birth corrected to 2013-09-03 on "
        "R8TN4X and R8TN4Y; 4) no change to the Orlando return (NA 907, 16:50); 5) no mileage upgrade."),
    ask("Thanks, that's all.",
        "You're welcome, Dana. Have a good trip to San Francisco on December 4."),
]


def conversation() -> Conversation:
    walk = []
    for b in BOOKINGS:
        walk += [_lookup(b), _status(b), _fare_rules(b), _bags(b)]
    return Conversation(
        scope="airline-support",
        id="en-airline-support",
        title="Northwind Air: upcoming trips for NW-4471-0926",
        language="en",
        start=datetime(2026, 11, 28, 14, 0, tzinfo=timezone.utc),
        turns=OPENING + walk[:12] + MIDDLE + walk[12:] + CLOSING,
        metadata={"channel": "chat", "member_tier": "gold"},
    )
