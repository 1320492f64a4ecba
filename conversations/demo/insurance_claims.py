"""Insurance claims assistant — an English home-and-auto claims conversation.

A policyholder files and follows two claims (a burst pipe at home and a
parking-lot collision) with an assistant that looks claims and policies up
through tools. The customer corrects the date of the water damage, withdraws
a statement about a rental car, and the assistant asks back once
(``clarify_pending``). One answer near the end was corrected by the agent
platform after it was first sent: seed_demo ingests both versions, so the
desk shows a revision.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

from .builder import Call, Conversation, ask, clarify, note, tool

# Damaged item, category, purchase year, price paid, depreciation %, receipt?
ITEMS = [
    ("oak floor, living room (31 m²)", "structure", 2019, 6820.00, 0, True),
    ("sofa, Hallberg 3-seater", "contents", 2021, 1450.00, 30, True),
    ("Persian-style rug 200x300", "contents", 2016, 980.00, 50, False),
    ("laptop, ThinkPad T14 (water on the charger and base)", "contents", 2024, 1329.00, 20, True),
    ("drywall and paint, hallway", "structure", 2019, 1240.00, 0, True),
    ("bookshelf and 60 paperbacks", "contents", 2018, 410.00, 40, False),
    ("washing machine, Bosch Serie 6", "contents", 2022, 749.00, 25, True),
]


def _item_turns(item):
    name, category, year, price, dep, receipt = item
    value = price * (100 - dep) / 100
    i = ITEMS.index(item)
    ask_value = [f"How much will I get for the {name.split(',')[0]}?", f"What about the {name.split(',')[0]}?",
                 f"Is the {name.split(',')[0]} covered?"][i % 3]
    covered = ("It falls under dwelling (structure) coverage, paid at replacement cost with no depreciation"
               if category == "structure" else
               f"It falls under personal property; your policy pays actual cash value: ${price:,.2f} less {dep}% "
               f"depreciation for a {year} purchase")
    proof = ("Your receipt is enough as proof." if receipt else
             "You don't have a receipt, so send a photo of the item and a bank statement or a similar listing online.")
    return [
        ask(ask_value, f"{name}: {covered}, so about ${value:,.2f} before the deductible. {proof}"),
        ask(["Can I get it repaired instead of replaced?", "Do I need a quote for that?",
             "Who decides if it's a total loss?"][i % 3],
            ["Yes. If a repair quote is lower than the value, we pay the repair; the adjuster compares both.",
             f"For anything over $500 the adjuster needs one written quote; for the {name.split(',')[0]} "
             f"{'a quote is required' if value > 500 else 'a photo is enough'}.",
             "The adjuster decides, using the contractor's moisture readings and photos; you can dispute it within 30 days."][i % 3]),
        ask([f"Put the {name.split(',')[0]} on the list.", "Add that one too.", "Ok, list it."][i % 3],
            f"Added item {i + 1} to CLM-2026-118734: {name}, {category}, bought {year}, ${price:,.2f}"
            f"{'' if receipt else ', no receipt (photo and proof of price needed)'}."),
    ]


OPENING = [
    note("You are a claims assistant for Harbor Mutual. Quote policy numbers and amounts exactly; "
         "never confirm coverage the policy does not show."),
    tool("Hi, a pipe burst in my kitchen on Tuesday, November 24, and water got into the living room. "
         "Policy HM-HO-5530217.",
         [Call("get_policy", {"policy_id": "HM-HO-5530217"},
               json.dumps({"holder": "Priya Raman", "type": "homeowners", "dwelling_limit": 420000,
                           "contents_limit": 126000, "deductible": 1000, "water_damage": "sudden and accidental"}))],
         "I'm sorry to hear that, Priya. Policy HM-HO-5530217 covers sudden and accidental water damage. "
         "Your deductible is $1,000, dwelling limit $420,000, contents limit $126,000. Shall I open a claim?"),
    ask("Wait, it was Monday the 23rd, not Tuesday. I found it Tuesday morning.",
        "Thanks, I'll record the date of loss as Monday, November 23, 2026 (discovered Tuesday, November 24). "
        "The date of loss is when the pipe burst, not when you found it."),
    tool("Yes, open the claim.",
         [Call("open_claim", {"policy_id": "HM-HO-5530217", "date_of_loss": "2026-11-23", "cause": "burst pipe"},
               '{"claim_id": "CLM-2026-118734", "adjuster": "Tomás Ferreira", "status": "open"}')],
         "Claim CLM-2026-118734 is open. Your adjuster is Tomás Ferreira; he will call within 2 business days. "
         "Please don't throw away damaged items until he has seen them or you have photos."),
    ask("Can I hire someone to dry the floor now? It's still wet.",
        "Yes, and you should: mitigating further damage is required by the policy. Emergency drying is covered; "
        "keep the invoice. Typical drying for one room runs $800–$1,500 over 3 to 5 days."),
    ask("The plumber charged $385 to fix the pipe. Is that covered?",
        "The repair of the pipe itself is not covered (it's maintenance), but the cost to access it, such as "
        "opening and closing the wall, is. Ask the plumber to split the invoice into access and repair."),
    clarify("And the stuff that got ruined?",
            "Do you mean your belongings (furniture, electronics, rugs), or parts of the house like the floor and walls? "
            "They fall under different coverages, so I want to list them correctly."),
    ask("Both. Let me list them.",
        "Great. For each item, tell me what it is, roughly when you bought it and what you paid, and whether you "
        "have a receipt. I'll tell you how it is valued."),
]

MIDDLE = [
    ask("While the floor dries we might stay at a hotel. And I think I also need a rental car because the garage is flooded.",
        "Hotel costs fall under Additional Living Expenses, up to $25,200 on your policy, if the home is unfit to live "
        "in. A rental car is not covered under homeowners; let me check whether your auto policy has rental cover."),
    ask("Forget the rental car, I was wrong, the garage is fine. Only the living room and hallway got wet.",
        "Understood, I've removed the rental car from the notes; nothing about the garage goes on the claim. "
        "The affected areas are the living room and the hallway."),
    ask("Do we qualify for the hotel then?",
        "Only if the adjuster confirms the home is unfit to live in. With one room drying and a working kitchen "
        "and bathroom, that's unlikely. If you do move out, keep every receipt and check with Tomás first."),
    tool("Different topic. Last week someone hit my car in a parking lot. Can you check that claim too?",
         [Call("find_claims", {"holder": "Priya Raman", "type": "auto", "since": "2026-11-01"},
               json.dumps({"claims": [{"claim_id": "CLM-2026-117902", "status": "awaiting photos",
                                       "policy": "HM-AU-2210984", "date_of_loss": "2026-11-19"}]}))],
         "Yes: CLM-2026-117902 on auto policy HM-AU-2210984, date of loss November 19, 2026. It's waiting for "
         "photos of the damage; nothing else is missing."),
    ask("I uploaded the photos yesterday.",
        "I don't see them attached yet; uploads made through the email link can take up to 24 hours to appear. "
        "If they are not there by tomorrow noon, upload them again in the app under the claim."),
    tool("Check again please.",
         [Call("get_claim", {"claim_id": "CLM-2026-117902"},
               '{"status": "under review", "photos": 6, "estimate": 2740.55, "deductible": 500}')],
         "They arrived: 6 photos are attached and the claim moved to \"under review\". The body shop estimate is "
         "$2,740.55; with your $500 auto deductible you'd receive $2,240.55 if approved."),
    ask("The other driver left a note with his plate, 7KRD-441. Does that help?",
        "Yes. With the plate we can pursue the other driver's insurer (subrogation). If they accept liability, "
        "your $500 deductible is refunded to you. I've added plate 7KRD-441 to CLM-2026-117902."),
    ask("Will this raise my premium?",
        "A not-at-fault claim with an identified driver normally doesn't affect your premium at renewal "
        "(March 1, 2027). If the other party is never identified, it may be rated as a comprehensive claim."),
]

CLOSING = [
    ask("The adjuster came. He says the floor has to be replaced entirely.",
        "Then the floor is paid at replacement cost under dwelling coverage. Tomás will write the estimate; "
        "expect it in the portal within 5 business days. You can pick your own contractor."),
    ask("My contractor quoted $7,450 for the floor.",
        "That's above the $6,820 you paid in 2019, which is normal for replacement cost. If Tomás's estimate is "
        "lower, send him the contractor's itemised quote and he'll reconcile line by line."),
    tool("What's the total so far on the water claim?",
         [Call("get_claim", {"claim_id": "CLM-2026-118734"},
               '{"status": "estimate pending", "items": 7, "drying_invoice": 1180.00}')],
         "CLM-2026-118734 is \"estimate pending\" with 7 items listed and a drying invoice of $1,180.00. The adjuster's "
         "total is not ready yet, so I can't give a payout figure today.",
         ),
    ask("When will I get paid?",
        "Once you accept the estimate, payment goes out within 10 business days by direct deposit. For structure "
        "payments over $5,000, your mortgage lender is named on the check, so allow extra time.",
        later="Once you accept the estimate, payment goes out within 10 business days by direct deposit. For structure "
              "payments over $5,000, your mortgage lender is named on the check, so allow extra time. Correction: "
              "contents payments are paid to you alone; only the structure part goes through the lender.",
        later_key="tail"),
    ask("Can I get an advance for the contents?",
        "Yes, an advance of up to $2,500 on contents is possible once the adjuster has seen the items, which he has. "
        "I've asked Tomás to approve it; you'll get a message when it's released."),
    ask("Thanks. Summarise both claims for me.",
        "CLM-2026-118734 (home, burst pipe): date of loss November 23 (corrected from the 24th), living room and "
        "hallway only, floor to be replaced, drying invoice $1,180, deductible $1,000, estimate pending, contents "
        "advance requested. No rental car or hotel. CLM-2026-117902 (auto, parking lot, November 19): under review, "
        "estimate $2,740.55, deductible $500, other driver's plate 7KRD-441 added for subrogation."),
]


def conversation() -> Conversation:
    items = [t for item in ITEMS for t in _item_turns(item)]
    return Conversation(
        scope="insurance-claims",
        id="en-insurance-claims",
        title="Harbor Mutual: water damage and parking-lot claims",
        language="en",
        start=datetime(2026, 11, 24, 16, 10, tzinfo=timezone.utc),
        turns=OPENING + items[:9] + MIDDLE + items[9:] + CLOSING,
        metadata={"channel": "app", "policies": ["HM-HO-5530217", "HM-AU-2210984"]},
    )
