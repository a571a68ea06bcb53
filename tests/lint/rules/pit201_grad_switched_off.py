# torch.set_grad_enabled(False) as a statement turns autograd off for the rest of its block and for
# what it calls (a chatbot's runTest); a forward whose value is only rebound through .numpy()
# built a graph nothing used (a Flask predictor).
import torch


def decode(decoder, hidden, steps):
    words = []
    token = torch.zeros(1, dtype=torch.long)
    for _ in range(steps):
        out, hidden = decoder(token, hidden)
        token = out.argmax(-1)
        words.append(token.item())
    return words


def evaluate_randomly(encoder, decoder, pairs):
    for sentence in pairs:
        hidden = encoder(sentence)
        print(decode(decoder, hidden, 10))


def run_test(encoder, decoder, pairs):
    torch.set_grad_enabled(False)
    encoder.train(False)
    decoder.train(False)
    evaluate_randomly(encoder, decoder, pairs)


def sentence_prediction(model, ids):  # warning: PIT201
    outputs = model(ids)
    outputs = torch.sigmoid(outputs).cpu().detach().numpy()
    return outputs[0][0]


def predict(model, ids):
    outputs = model(ids)
    outputs = torch.sigmoid(outputs)  # rebound from a value that keeps the graph: followed on
    return outputs


def fine_tune(model, ids, optimizer):
    optimizer.zero_grad()
    loss = predict(model, ids).sum()
    loss.backward()
    optimizer.step()


def api(model, ids):
    score = sentence_prediction(model, ids)
    return {"positive": score, "negative": 1 - score}
