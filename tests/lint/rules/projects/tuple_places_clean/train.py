from metrics import cal_performance


def train_epoch(model, loader, optimizer):
    n_word_total, n_word_correct, total_loss = 0, 0, 0.0
    for src, gold in loader:
        optimizer.zero_grad()
        loss, n_correct, n_word = cal_performance(model(src), gold)
        loss.backward()
        optimizer.step()
        n_word_total += n_word
        n_word_correct += n_correct
        total_loss += loss.item()
    return total_loss / n_word_total
